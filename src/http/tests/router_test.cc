// The router on its own (precedence, decoding, 404/405, the guard, setup assertions) and
// mounted on a real HttpServer, reached through the HTTP client.

#include "http/router.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "http/http_client.h"
#include "http/http_server.h"

namespace magnetar::http {
namespace {

// Answers 200 "<name> k=v k=v ..." (parameters in template order).
RouteHandler echo(std::string name) {
  return [name](const Request&, const PathParams& params) -> Task<Response> {
    std::string body = name;
    for (const auto& [k, v] : params) {
      body += ' ';
      body += k;
      body += '=';
      body += v;
    }
    Response r;
    r.body = std::move(body);
    co_return r;
  };
}

Response call(const Router& router, std::string method, std::string path) {
  Request req;
  req.method = std::move(method);
  req.path = std::move(path);
  req.target = req.path;
  return run_sync<Response>([&router, &req] { return router.dispatch(req); });
}

TEST(RouterTest, LiteralSegmentBeatsParameter) {
  Router r;
  r.add("GET", "/admin/v2/clusters/{cluster}", Permission::authenticated(), echo("cluster"));
  r.add("GET", "/admin/v2/clusters/{cluster}/peers", Permission::authenticated(), echo("peers"));
  r.add("GET", "/admin/v2/persistent/{tenant}/{namespace}/{topic}",
        Permission::topic_op("persistent", Action::kLookup, "GET_METADATA"), echo("topic"));
  r.add("GET", "/admin/v2/persistent/{tenant}/{namespace}/partitioned",
        Permission::namespace_op(Action::kConsume, "GET_TOPICS"), echo("partitioned"));
  r.add("PUT", "/admin/v2/persistent/{tenant}/{namespace}/{topic}", Permission::tenant_admin(),
        echo("create"));

  EXPECT_EQ(call(r, "GET", "/admin/v2/clusters/c1").body, "cluster cluster=c1");
  EXPECT_EQ(call(r, "GET", "/admin/v2/clusters/c1/peers").body, "peers cluster=c1");
  EXPECT_EQ(call(r, "GET", "/admin/v2/clusters/peers").body, "cluster cluster=peers");
  EXPECT_EQ(call(r, "GET", "/admin/v2/persistent/t/ns/partitioned").body,
            "partitioned tenant=t namespace=ns");
  EXPECT_EQ(call(r, "GET", "/admin/v2/persistent/t/ns/x").body,
            "topic tenant=t namespace=ns topic=x");
  // Precedence among the request method's routes only: PUT has no literal "partitioned".
  EXPECT_EQ(call(r, "PUT", "/admin/v2/persistent/t/ns/partitioned").body,
            "create tenant=t namespace=ns topic=partitioned");
}

TEST(RouterTest, TheFirstDifferingSegmentDecidesPrecedence) {
  Router r;
  // Registration order must not matter: the later, more literal-first template wins.
  r.add("GET", "/a/{x}/lit", Permission::none(), echo("param-first"));
  r.add("GET", "/a/lit/{y}", Permission::none(), echo("literal-first"));
  r.add("GET", "/a/{x}/{y}", Permission::none(), echo("params"));
  EXPECT_EQ(call(r, "GET", "/a/lit/lit").body, "literal-first y=lit");
  EXPECT_EQ(call(r, "GET", "/a/other/lit").body, "param-first x=other");
  EXPECT_EQ(call(r, "GET", "/a/other/z").body, "params x=other y=z");
}

TEST(RouterTest, DecodesEachSegmentAfterSplitting) {
  Router r;
  r.add("GET", "/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}",
        Permission::topic_op("{domain}", Action::kLookup, "LOOKUP"), echo("lookup"));
  EXPECT_EQ(call(r, "GET", "/lookup/v2/topic/persistent/t/ns/a%2Fb%20c").body,
            "lookup domain=persistent tenant=t namespace=ns topic=a/b c");
  // An unescaped '/' separates segments: five after "topic" match nothing.
  EXPECT_EQ(call(r, "GET", "/lookup/v2/topic/persistent/t/ns/a/b").status, 404);
  // Literals compare with the decoded segment.
  EXPECT_EQ(call(r, "GET", "/lookup/v2/%74opic/persistent/t/ns/x").body,
            "lookup domain=persistent tenant=t namespace=ns topic=x");
}

TEST(RouterTest, MalformedEscapeAnswers400) {
  Router r;
  r.add("GET", "/admin/v2/tenants/{tenant}", Permission::tenant_admin(), echo("tenant"));
  for (const char* path : {"/admin/v2/tenants/a%2", "/admin/v2/tenants/a%zz", "/x%/y"}) {
    Response resp = call(r, "GET", path);
    EXPECT_EQ(resp.status, 400) << path;
    EXPECT_EQ(resp.content_type, "application/json") << path;
  }
}

TEST(RouterTest, OneTrailingSlashIsIgnored) {
  Router r;
  r.add("GET", "/admin/v2/clusters/{cluster}", Permission::authenticated(), echo("cluster"));
  r.add("GET", "/admin/v2/clusters/", Permission::authenticated(), echo("list"));
  EXPECT_EQ(call(r, "GET", "/admin/v2/clusters/c1/").body, "cluster cluster=c1");
  EXPECT_EQ(call(r, "GET", "/admin/v2/clusters").body, "list");
  EXPECT_EQ(call(r, "GET", "/admin/v2/clusters/").body, "list");
  // A parameter never matches an empty segment.
  EXPECT_EQ(call(r, "GET", "/admin/v2/clusters//").status, 404);
  EXPECT_EQ(call(r, "GET", "/admin/v2/clusters/c1//").status, 404);
}

TEST(RouterTest, NotFoundVersusMethodNotAllowed) {
  Router r;
  r.add("PUT", "/admin/v2/tenants/{tenant}", Permission::super_user(), echo("create"));
  r.add("DELETE", "/admin/v2/tenants/{tenant}", Permission::super_user(), echo("delete"));
  Response wrong = call(r, "GET", "/admin/v2/tenants/t");
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.body, R"({"reason":"Method Not Allowed"})");
  Response missing = call(r, "GET", "/admin/v2/tenants/t/extra");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, R"({"reason":"Not Found"})");
  EXPECT_EQ(call(r, "PUT", "/admin/v2/nothing").status, 404);
  EXPECT_EQ(call(r, "DELETE", "/admin/v2/tenants/t").body, "delete tenant=t");
}

TEST(RouterTest, GuardShortCircuitsAndSeesThePermissionAndParams) {
  Router r;
  int handled = 0;
  r.add("POST",
        "/admin/v2/persistent/{tenant}/{namespace}/{topic}/subscription/{subscription}/skip/"
        "{count}",
        Permission::subscription_op("persistent", "SKIP"),
        [&handled](const Request&, const PathParams& p) -> Task<Response> {
          ++handled;
          co_return Response::json(204, "");
        });
  std::vector<std::string> seen;
  r.set_guard([&seen](const Request& req, const Route& route,
                      const PathParams& params) -> Task<std::optional<Response>> {
    const Resource res = route.permission.resource(params);
    seen.push_back(fmt::format("{} {} {} {} {} sub={} count={}", req.method, route.path,
                               to_string(route.permission.scope),
                               to_string(route.permission.action), res.topic_name(),
                               res.subscription, params.at("count")));
    if (res.tenant == "locked") co_return Response::error(401, "Unauthorized");
    co_return std::nullopt;
  });

  Response denied = call(r, "POST", "/admin/v2/persistent/locked/ns/x/subscription/s%2F1/skip/5");
  EXPECT_EQ(denied.status, 401);
  EXPECT_EQ(denied.body, R"({"reason":"Unauthorized"})");
  EXPECT_EQ(handled, 0);
  Response allowed = call(r, "POST", "/admin/v2/persistent/open/ns/x/subscription/s/skip/3");
  EXPECT_EQ(allowed.status, 204);
  EXPECT_EQ(handled, 1);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0],
            "POST /admin/v2/persistent/{tenant}/{namespace}/{topic}/subscription/{subscription}"
            "/skip/{count} subscription consume persistent://locked/ns/x sub=s/1 count=5");
  // Neither 404 nor 405 reaches the guard.
  EXPECT_EQ(call(r, "GET", "/admin/v2/persistent/open/ns/x/subscription/s/skip/3").status, 405);
  EXPECT_EQ(call(r, "POST", "/admin/v2/persistent/open").status, 404);
  EXPECT_EQ(seen.size(), 2u);
}

TEST(RouterTest, WithoutAGuardEveryRequestProceeds) {
  Router r;
  r.add("PUT", "/admin/v2/clusters/{cluster}", Permission::super_user(), echo("create"));
  EXPECT_EQ(call(r, "PUT", "/admin/v2/clusters/c1").body, "create cluster=c1");
}

TEST(RouterTest, PathParamsAccessorIsChecked) {
  Router r;
  r.add("GET", "/admin/v2/tenants/{tenant}", Permission::tenant_admin(), echo("tenant"));
  auto found = r.match("GET", "/admin/v2/tenants/t%2Fx");
  ASSERT_TRUE(std::holds_alternative<Router::Match>(found));
  const auto& m = std::get<Router::Match>(found);
  EXPECT_EQ(m.route->path, "/admin/v2/tenants/{tenant}");
  EXPECT_EQ(m.params.at("tenant"), "t/x");
  EXPECT_EQ(m.params.find("namespace"), nullptr);
  EXPECT_THROW((void)m.params.at("namespace"), std::out_of_range);
}

TEST(RouterTest, PermissionResolvesLiteralAndParameterNames) {
  PathParams params;
  params.add("domain", "non-persistent");
  params.add("tenant", "t");
  params.add("namespace", "ns");
  params.add("topic", "x");
  const Resource lookup =
      Permission::topic_op("{domain}", Action::kLookup, "LOOKUP").resource(params);
  EXPECT_EQ(lookup.topic_name(), "non-persistent://t/ns/x");
  EXPECT_EQ(lookup.namespace_name(), "t/ns");
  const Resource fixed =
      Permission::topic_op("persistent", Action::kProduce, "PRODUCE").resource(params);
  EXPECT_EQ(fixed.topic_name(), "persistent://t/ns/x");
  const Resource tenant = Permission::tenant_admin().resource(params);
  EXPECT_EQ(tenant.tenant, "t");
  EXPECT_TRUE(tenant.ns.empty());
  EXPECT_TRUE(Permission::super_user().resource(params).tenant.empty());
}

TEST(RouterDeathTest, DuplicateTemplateForOneMethodAsserts) {
  Router r;
  r.add("GET", "/admin/v2/clusters/{cluster}", Permission::authenticated(), echo("a"));
  r.add("POST", "/admin/v2/clusters/{cluster}", Permission::super_user(), echo("b"));
  r.add("GET", "/admin/v2/clusters/{cluster}/peers", Permission::authenticated(), echo("c"));
  EXPECT_DEATH(r.add("GET", "/admin/v2/clusters/{name}/", Permission::authenticated(), echo("d")),
               "duplicates GET /admin/v2/clusters/\\{cluster\\}");
}

TEST(RouterDeathTest, MalformedTemplatesAndPermissionsAssert) {
  Router r;
  EXPECT_DEATH(r.add("GET", "admin/v2", Permission::none(), echo("x")), "start with '/'");
  EXPECT_DEATH(r.add("GET", "/a//b", Permission::none(), echo("x")), "empty segment");
  EXPECT_DEATH(r.add("GET", "/a/x{y}", Permission::none(), echo("x")), "bad segment");
  EXPECT_DEATH(r.add("GET", "/a/{x}/{x}", Permission::none(), echo("x")), "repeats parameter");
  EXPECT_DEATH(r.add("GET", "/admin/v2/persistent/{tenant}/{namespace}",
                     Permission::topic_op("persistent", Action::kLookup, "LOOKUP"), echo("x")),
               "not a parameter");
  Permission bare;
  bare.scope = Scope::kTenantAdmin;
  EXPECT_DEATH(r.add("GET", "/admin/v2/tenants/{tenant}", bare, echo("x")),
               "without the names it needs");
}

TEST(RouterDeathTest, AddingAfterMountAsserts) {
  auto r = std::make_shared<Router>();
  r->add("GET", "/admin/v2/clusters", Permission::authenticated(), echo("list"));
  ServerOptions o;
  o.port = 0;
  auto server = HttpServer::start(o, log::Logger("router-test"));
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  mount(**server, r, "/admin/v2/");
  (*server)->stop();
  EXPECT_DEATH(r->add("GET", "/admin/v2/tenants", Permission::authenticated(), echo("x")),
               "added after mount");
}

class MountedRouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.port = 0;
    auto s = HttpServer::start(o, log::Logger("router-test"));
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    server_ = std::move(s).value();
  }

  HttpResponse send(std::string method, std::string path) {
    HttpRequest req;
    req.method = std::move(method);
    req.url = "http://127.0.0.1:" + std::to_string(server_->port()) + path;
    auto r = HttpClient().send_blocking(req);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? std::move(r).value() : HttpResponse{};
  }

  std::unique_ptr<HttpServer> server_;
};

TEST_F(MountedRouterTest, ServesRoutesBesideTheServersOwn) {
  add_metrics_route(*server_);
  server_->route("GET", "/admin/v2/brokers", [](const Request&) -> Task<Response> {
    Response r;
    r.body = "exact";
    co_return r;
  });
  auto router = std::make_shared<Router>();
  router->add("GET", "/admin/v2/persistent/{tenant}/{namespace}/{topic}/stats",
              Permission::topic_op("persistent", Action::kLookup, "GET_STATS"), echo("stats"));
  router->add("PUT", "/admin/v2/tenants/{tenant}", Permission::super_user(), echo("create"));
  router->add("GET", "/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}",
              Permission::topic_op("{domain}", Action::kLookup, "LOOKUP"), echo("lookup"));
  router->set_guard([](const Request& req, const Route& route,
                       const PathParams&) -> Task<std::optional<Response>> {
    if (route.permission.scope == Scope::kSuperUser &&
        req.headers.find("authorization") == req.headers.end()) {
      co_return Response::error(401, "This operation requires super-user access");
    }
    co_return std::nullopt;
  });
  mount(*server_, router, "/admin/v2/");
  mount(*server_, router, "/lookup/");

  HttpResponse stats = send("GET", "/admin/v2/persistent/t/ns/a%2Fb/stats?x=1");
  EXPECT_EQ(stats.status, 200);
  EXPECT_EQ(stats.body, "stats tenant=t namespace=ns topic=a/b");
  EXPECT_EQ(send("GET", "/lookup/v2/topic/persistent/t/ns/x").body,
            "lookup domain=persistent tenant=t namespace=ns topic=x");
  HttpResponse denied = send("PUT", "/admin/v2/tenants/t");
  EXPECT_EQ(denied.status, 401);
  EXPECT_EQ(denied.body, R"({"reason":"This operation requires super-user access"})");
  HttpResponse wrong = send("DELETE", "/admin/v2/tenants/t");
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.body, R"({"reason":"Method Not Allowed"})");
  // DELETE has no route at all, yet under the prefix the router answers 404, not the server 405.
  HttpResponse missing = send("DELETE", "/admin/v2/nothing");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, R"({"reason":"Not Found"})");
  EXPECT_EQ(send("GET", "/admin/v2/persistent/t/ns/a%zz/stats").status, 400);
  // The server's exact routes keep working.
  EXPECT_EQ(send("GET", "/admin/v2/brokers").body, "exact");
  HttpResponse metrics = send("GET", "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.header("content-type").find("version=0.0.4"), std::string::npos);
  EXPECT_EQ(send("GET", "/elsewhere").status, 404);
}

}  // namespace
}  // namespace magnetar::http
