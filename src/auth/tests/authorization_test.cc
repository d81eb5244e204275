// Pulsar's authorization decisions (PulsarAuthorizationProvider) over policies as the admin
// REST API stores them.

#include "auth/authorization.h"

#include <gtest/gtest.h>

namespace magnetar::auth {
namespace {

const ActionSet kProduce = {AuthAction::kProduce};
const ActionSet kConsume = {AuthAction::kConsume};
const ActionSet kLookup = {AuthAction::kProduce, AuthAction::kConsume};

AuthPolicies policies(const char* json) {
  return AuthPolicies::from_policies(nlohmann::json::parse(json));
}

TEST(AuthorizationTest, NamespaceAndTopicGrantsAreUnionedAndActionsAreDistinct) {
  auto p = policies(R"({"auth_policies": {
      "namespace_auth": {"app1": ["produce", "consume"], "reader": ["consume"]},
      "destination_auth": {"persistent://t/ns/x": {"app2": ["consume"]},
                           "persistent://t/ns/parted": {"app3": ["produce"]}},
      "subscription_auth_roles": {}}})");
  Authorizer authz({});
  EXPECT_TRUE(authz.topic_allows(p, "app1", "persistent://t/ns/any", kProduce));
  EXPECT_TRUE(authz.topic_allows(p, "reader", "persistent://t/ns/any", kConsume));
  EXPECT_FALSE(authz.topic_allows(p, "reader", "persistent://t/ns/any", kProduce));
  EXPECT_TRUE(authz.topic_allows(p, "reader", "persistent://t/ns/any", kLookup));
  // Topic grants count on that topic only, and not at namespace level.
  EXPECT_TRUE(authz.topic_allows(p, "app2", "persistent://t/ns/x", kConsume));
  EXPECT_FALSE(authz.topic_allows(p, "app2", "persistent://t/ns/y", kConsume));
  EXPECT_FALSE(authz.namespace_allows(p, "app2", kConsume));
  // A partition counts its parent's grants; a look-alike name does not.
  EXPECT_TRUE(authz.topic_allows(p, "app3", "persistent://t/ns/parted-partition-2", kProduce));
  EXPECT_FALSE(authz.topic_allows(p, "app3", "persistent://t/ns/parted-partition-x", kProduce));
  EXPECT_FALSE(authz.topic_allows(p, "app3", "persistent://t/ns/parted-2", kProduce));
  // No role, no grant.
  EXPECT_FALSE(authz.topic_allows(p, "", "persistent://t/ns/x", kLookup));
  EXPECT_FALSE(authz.topic_allows(p, "nobody", "persistent://t/ns/x", kLookup));
}

TEST(AuthorizationTest, WildcardsMatchOnlyWhenEnabledAndOnlyAtTheEnds) {
  auto p = policies(R"({"auth_policies": {"namespace_auth": {
      "team-*": ["produce"], "*-reader": ["consume"], "a*b": ["produce"]}}})");
  Authorizer plain({});
  Authorizer wild({.super_users = {}, .wildcards = true});
  EXPECT_FALSE(plain.namespace_allows(p, "team-blue", kProduce));
  EXPECT_TRUE(wild.namespace_allows(p, "team-blue", kProduce));
  EXPECT_FALSE(wild.namespace_allows(p, "team-blue", kConsume));
  EXPECT_TRUE(wild.namespace_allows(p, "x-reader", kConsume));
  EXPECT_FALSE(wild.namespace_allows(p, "reader", kConsume));
  EXPECT_FALSE(wild.namespace_allows(p, "axb", kProduce));  // '*' in the middle is literal
  EXPECT_TRUE(wild.namespace_allows(p, "a*b", kProduce));
}

TEST(AuthorizationTest, SubscriptionRolesAndPrefixMode) {
  auto p = policies(R"({"auth_policies": {"subscription_auth_roles": {
      "locked": ["app1"], "open": []}}})");
  Authorizer authz({});
  EXPECT_EQ(authz.subscription_allows(p, "app1", "locked"), SubscriptionVerdict::kAllowed);
  EXPECT_EQ(authz.subscription_allows(p, "app2", "locked"), SubscriptionVerdict::kRoleNotAllowed);
  EXPECT_EQ(authz.subscription_allows(p, "app2", "open"), SubscriptionVerdict::kAllowed);
  EXPECT_EQ(authz.subscription_allows(p, "app2", "other"), SubscriptionVerdict::kAllowed);
  auto prefixed = policies(R"({"subscription_auth_mode": "Prefix"})");
  EXPECT_EQ(authz.subscription_allows(prefixed, "app1", "app1-sub"), SubscriptionVerdict::kAllowed);
  EXPECT_EQ(authz.subscription_allows(prefixed, "app1", "sub"),
            SubscriptionVerdict::kPrefixRequired);
}

TEST(AuthorizationTest, SuperUsersAndTenantAdminsByExactName) {
  Authorizer authz({.super_users = {"root"}, .wildcards = true});
  EXPECT_TRUE(authz.is_super_user("root"));
  EXPECT_FALSE(authz.is_super_user("roo"));
  EXPECT_FALSE(authz.is_super_user(""));
  auto admins = tenant_admin_roles(nlohmann::json::parse(R"({"adminRoles": ["t-admin", 3]})"));
  ASSERT_EQ(admins.size(), 1u);
  EXPECT_TRUE(authz.is_tenant_admin("t-admin", admins));
  EXPECT_FALSE(authz.is_tenant_admin("t-admin2", admins));
  EXPECT_TRUE(tenant_admin_roles(nlohmann::json::parse("[1]")).empty());
}

TEST(AuthorizationTest, MalformedPoliciesGrantNothing) {
  for (const char* json : {"null", "[]", R"({"auth_policies": 5})",
                           R"({"auth_policies": {"namespace_auth": {"app1": "produce"}}})",
                           R"({"auth_policies": {"namespace_auth": {"app1": ["write"]}}})",
                           R"({"auth_policies": {"destination_auth": {"t": ["produce"]}}})"}) {
    auto p = policies(json);
    EXPECT_FALSE(Authorizer({}).topic_allows(p, "app1", "t", kLookup)) << json;
  }
  EXPECT_EQ(parse_auth_action("produce"), AuthAction::kProduce);
  EXPECT_FALSE(parse_auth_action("Produce"));
  EXPECT_EQ(auth_action_names(), "[produce, consume, functions, sources, sinks, packages]");
}

}  // namespace
}  // namespace magnetar::auth
