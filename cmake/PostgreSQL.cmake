# Locate the PostgreSQL server development files through pg_config.
# Pass -DPG_CONFIG=/usr/lib/postgresql/16/bin/pg_config to build for another major version.
find_program(PG_CONFIG NAMES pg_config
  HINTS /usr/lib/postgresql/15/bin
  DOC "pg_config of the PostgreSQL server to build against")
if(NOT PG_CONFIG)
  message(FATAL_ERROR "pg_config not found: install postgresql-server-dev-15 (scripts/setup does)")
endif()

function(_pg_config_var out flag)
  execute_process(COMMAND ${PG_CONFIG} ${flag} OUTPUT_VARIABLE value
                  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${PG_CONFIG} ${flag} failed")
  endif()
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

_pg_config_var(PG_INCLUDEDIR_SERVER --includedir-server)
_pg_config_var(PG_PKGLIBDIR --pkglibdir)
_pg_config_var(PG_SHAREDIR --sharedir)
_pg_config_var(PG_BINDIR --bindir)
_pg_config_var(PG_VERSION_STRING --version)
message(STATUS "Building against ${PG_VERSION_STRING} (${PG_CONFIG})")
