-- Everything pg_once installs, one sorted line per object with its full definition and
-- privileges, so two databases can be compared with diff.
WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'pg_once'),
members AS (
    SELECT d.classid, d.objid FROM pg_depend d, ext
     WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'
)
SELECT line FROM (
    SELECT pg_describe_object(m.classid, m.objid, 0) AS line FROM members m
    UNION ALL
    SELECT 'function ' || p.oid::regprocedure || E'\n' || pg_get_functiondef(p.oid) ||
           ' acl=' || coalesce(p.proacl::text, 'default')
      FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
    UNION ALL
    SELECT 'relation ' || c.oid::regclass || ' kind=' || c.relkind::text ||
           ' options=' || coalesce(c.reloptions::text, '') || ' acl=' || coalesce(c.relacl::text, 'default') ||
           ' columns=' || coalesce((SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) ||
                                      CASE WHEN a.attnotnull THEN ' not null' ELSE '' END ||
                                      coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), ''), ', ' ORDER BY a.attnum)
                                 FROM pg_attribute a
                                 LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
                                WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '') ||
           coalesce(' view=' || pg_get_viewdef(c.oid), '')
      FROM members m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
    UNION ALL
    SELECT 'index ' || pg_get_indexdef(i.indexrelid)
      FROM members m JOIN pg_index i ON m.classid = 'pg_class'::regclass AND i.indrelid = m.objid
    UNION ALL
    SELECT 'constraint ' || co.conrelid::regclass || ' ' || co.conname || ' ' || pg_get_constraintdef(co.oid)
      FROM members m JOIN pg_constraint co ON m.classid = 'pg_class'::regclass AND co.conrelid = m.objid
    UNION ALL
    SELECT 'trigger ' || pg_get_triggerdef(t.oid)
      FROM members m JOIN pg_trigger t ON m.classid = 'pg_class'::regclass AND t.tgrelid = m.objid AND NOT t.tgisinternal
    UNION ALL
    SELECT 'schema acl ' || coalesce(n.nspacl::text, 'default') FROM pg_namespace n WHERE n.nspname = 'once'
    UNION ALL
    SELECT 'role ' || r.rolname || ' member of ' ||
           coalesce((SELECT string_agg(g.rolname, ',' ORDER BY g.rolname) FROM pg_auth_members am
                       JOIN pg_roles g ON g.oid = am.roleid WHERE am.member = r.oid), '')
      FROM pg_roles r WHERE r.rolname LIKE 'once\_%'
) lines
ORDER BY line;
