#include "console_options.hpp"
#include "pages/database_prefix.hpp"

#include <gtest/gtest.h>

using namespace once::console;

TEST(DatabasePrefix, SplitsTheDatabaseOffThePath) {
    auto p = split_database_prefix("/db/orders/dead/0190");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->db, "orders");
    EXPECT_EQ(p->path, "/dead/0190");
    p = split_database_prefix("/db/orders");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->path, "/");
    EXPECT_FALSE(split_database_prefix("/dead"));
    EXPECT_FALSE(split_database_prefix("/db/"));
    EXPECT_FALSE(split_database_prefix("/dbx/orders"));
}

// Every link and form of a page stays in its database; the selector's links are left alone.
TEST(DatabasePrefix, PrefixesEveryLocalLinkAndForm) {
    std::string html = "<a href=\"/dead?topic=a\">x</a><form method=post action=\"/dead/confirm\"></form>"
                       "<a href=\"/db/billing/\">billing</a><a href=\"https://example.org/\">out</a><a href=\"/\">home</a>";
    EXPECT_EQ(prefix_links(html, "/db/orders"),
              "<a href=\"/db/orders/dead?topic=a\">x</a><form method=post action=\"/db/orders/dead/confirm\"></form>"
              "<a href=\"/db/billing/\">billing</a><a href=\"https://example.org/\">out</a><a href=\"/db/orders/\">home</a>");
    EXPECT_EQ(prefix_links("no links", "/db/x"), "no links");
}

TEST(DatabasePrefix, RedirectsStayInTheirDatabaseButLogin) {
    EXPECT_EQ(prefix_location("/dead", "/db/orders"), "/db/orders/dead");
    EXPECT_EQ(prefix_location("/saga?name=a&id=b", "/db/orders"), "/db/orders/saga?name=a&id=b");
    EXPECT_EQ(prefix_location("/login", "/db/orders"), "/login");
    EXPECT_EQ(prefix_location("/db/billing/", "/db/orders"), "/db/billing/");
}

TEST(DatabaseOptions, DbIsNamedByItsDbnameAndDatabaseByItsName) {
    const char* argv[] = {"once-console", "--db", "host=/tmp dbname=orders", "--database", "billing  host=/tmp dbname=bill",
                          "--database", "bi2 postgresql://u@h/bill2", "--credentials", "/x"};
    Options o = parse_options(9, argv);
    ASSERT_EQ(o.databases.size(), 3u);
    EXPECT_EQ(o.databases[0], (DatabaseOption{"orders", "host=/tmp dbname=orders"}));
    EXPECT_EQ(o.databases[1], (DatabaseOption{"billing", "host=/tmp dbname=bill"}));
    EXPECT_EQ(o.databases[2], (DatabaseOption{"bi2", "postgresql://u@h/bill2"}));
}

TEST(DatabaseOptions, Refusals) {
    const char* none[] = {"once-console", "--credentials", "/x"};
    EXPECT_THROW(parse_options(3, none), std::runtime_error);
    const char* twice[] = {"once-console", "--db", "dbname=orders", "--database", "orders dbname=other", "--credentials", "/x"};
    EXPECT_THROW(parse_options(7, twice), std::runtime_error);
    EXPECT_THROW(parse_database_option("Orders dbname=x"), std::runtime_error);   // upper case
    EXPECT_THROW(parse_database_option("orders"), std::runtime_error);            // no conninfo
    EXPECT_THROW(parse_database_option("dbname=x host=y"), std::runtime_error);   // a conninfo, no name
    const char* odd_dbname[] = {"once-console", "--db", "dbname='my db'", "--credentials", "/x"};
    EXPECT_THROW(parse_options(5, odd_dbname), std::runtime_error);
    const char* no_dbname[] = {"once-console", "--db", "host=/tmp", "--credentials", "/x"};
    EXPECT_EQ(parse_options(5, no_dbname).databases[0].name, "default");
}
