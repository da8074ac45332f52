#include "core/permission_hint.hpp"

#include <gtest/gtest.h>

using once::permission_hint;

TEST(PermissionHint, SchemaOnceNamesTheRoleToGrant) {
    EXPECT_EQ(permission_hint("permission denied for schema %s", "permission denied for schema once", "alice"),
              "Grant the role a pg_once role: GRANT once_producer TO alice to send messages and start sagas; "
              "once_relay for a relay, once_consumer for an inbox, once_admin to operate (docs/security.md).");
}

TEST(PermissionHint, OtherSchemasAndMessagesGetNone) {
    EXPECT_EQ(permission_hint("permission denied for schema %s", "permission denied for schema onceler", "alice"), "");
    EXPECT_EQ(permission_hint("permission denied for schema %s", "permission denied for schema public", "alice"), "");
    EXPECT_EQ(permission_hint("permission denied for table %s", "permission denied for table outbox", "alice"), "");
    EXPECT_EQ(permission_hint("must be owner of table %s", "must be owner of table once", "alice"), "");
}

TEST(PermissionHint, FunctionsNameTheirRole) {
    EXPECT_EQ(permission_hint("permission denied for function %s", "permission denied for function send", "bob"),
              "once.send is granted to once_producer: GRANT once_producer TO bob.");
    EXPECT_EQ(permission_hint("permission denied for function %s", "permission denied for function claim", "r"),
              "once.claim is granted to once_relay: GRANT once_relay TO r.");
    EXPECT_EQ(permission_hint("permission denied for function %s", "permission denied for function deliver", "c"),
              "once.deliver is granted to once_consumer: GRANT once_consumer TO c.");
    EXPECT_EQ(permission_hint("permission denied for function %s", "permission denied for function redrive", "ops"),
              "once.redrive is granted to once_admin: GRANT once_admin TO ops.");
    EXPECT_EQ(permission_hint("permission denied for function %s", "permission denied for function my_func", "a"), "");
    EXPECT_EQ(permission_hint("permission denied for function %s", "permission denied for function _saga_apply", "a"), "");
}

TEST(PermissionHint, RoleNamesAreQuotedWhenNeeded) {
    EXPECT_EQ(permission_hint("permission denied for function %s", "permission denied for function send", "Alice"),
              "once.send is granted to once_producer: GRANT once_producer TO \"Alice\".");
    EXPECT_EQ(permission_hint("permission denied for function %s", "permission denied for function send", "a\"b"),
              "once.send is granted to once_producer: GRANT once_producer TO \"a\"\"b\".");
    EXPECT_EQ(permission_hint("permission denied for function %s", "permission denied for function send", ""),
              "once.send is granted to once_producer: GRANT once_producer TO <role>.");
}
