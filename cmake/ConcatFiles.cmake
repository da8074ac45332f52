# cmake -DOUTPUT=file -DPARTS_DIR=dir -P ConcatFiles.cmake: writes dir/*.sql, in name order, to OUTPUT.
file(GLOB parts ${PARTS_DIR}/*.sql)
list(SORT parts)
file(WRITE ${OUTPUT} "-- Generated from sql/src/ by the build; edit the parts, not this file.\n")
foreach(part ${parts})
  get_filename_component(name ${part} NAME)
  file(READ ${part} content)
  file(APPEND ${OUTPUT} "\n-- ---- sql/src/${name} ----\n${content}")
endforeach()
