// `magnetar-admin bookies ...`: /admin/v2/bookies, pulsar-admin's CmdBookies.
//
//   racks-placement                    every group's bookies, one line per group as pulsar-admin
//                                      prints its map: "<group>    {<bookie>=BookieInfoImpl(
//                                      rack=<rack>, hostname=<host>), ...}"
//   list-bookies                       {"bookies" : [ {"bookieId" : ...} ]}, pretty-printed
//   get-bookie-rack -b B               {"rack" : ..., "hostname" : ...}, pretty-printed
//   delete-bookie-rack -b B            nothing
//   set-bookie-rack -b B -r R [-g G] [--hostname H]   nothing; group "default" unless given

#include <memory>
#include <string>

#include "cli/arguments.h"
#include "cli/commands.h"

namespace magnetar::cli {

namespace {

// A JSON string as Java's String.valueOf prints it ("null" for a missing or null value).
std::string java_string(const Json& object, const char* key) {
  if (!object.is_object()) return "null";
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "null";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// One group's bookies as Java's Map.toString() prints Map<String, BookieInfoImpl>.
std::string java_group(const Json& bookies) {
  if (!bookies.is_object()) return bookies.dump();
  std::string out = "{";
  for (const auto& [bookie, info] : bookies.items()) {
    if (out.size() > 1) out += ", ";
    out += bookie + "=BookieInfoImpl(rack=" + java_string(info, "rack") +
           ", hostname=" + java_string(info, "hostname") + ")";
  }
  return out + "}";
}

std::string rack_path(const std::string& bookie) {
  return "/admin/v2/bookies/racks-info/" + encode_segment(bookie);
}

}  // namespace

void add_bookie_commands(CLI::App& app, CommandTable& table) {
  CLI::App* g = add_group(app, "bookies", "Operations about bookies rack placement");

  CLI::App* all = g->add_subcommand(
      "racks-placement", "Gets the rack placement information for all the bookies in the cluster");
  table.on(all, [](Session& s) {
    auto response = s.call("GET", "/admin/v2/bookies/racks-info");
    if (!response) return 1;
    const Json groups = Session::parse(*response);
    if (!groups.is_object()) {
      s.print(groups);
      return 0;
    }
    for (const auto& [group, bookies] : groups.items()) {
      s.out() << group << "    " << java_group(bookies) << "\n";
    }
    return 0;
  });

  CLI::App* list = g->add_subcommand("list-bookies", "List bookies");
  table.on(list, [](Session& s) { return s.print_value("/admin/v2/bookies/all"); });

  auto get_bookie = std::make_shared<std::string>();
  CLI::App* get =
      g->add_subcommand("get-bookie-rack",
                        "Gets the rack placement information for a specific bookie in the cluster");
  get->add_option("-b,--bookie", *get_bookie, "Bookie address (format: `address:port`)")
      ->required();
  table.on(get, [get_bookie](Session& s) { return s.print_value(rack_path(*get_bookie)); });

  auto delete_bookie = std::make_shared<std::string>();
  CLI::App* remove =
      g->add_subcommand("delete-bookie-rack",
                        "Remove rack placement information for a specific bookie in the cluster");
  remove->add_option("-b,--bookie", *delete_bookie, "Bookie address (format: `address:port`)")
      ->required();
  table.on(remove,
           [delete_bookie](Session& s) { return s.change("DELETE", rack_path(*delete_bookie)); });

  struct SetArgs {
    std::string bookie;
    std::string rack;
    std::string group = "default";
    std::string hostname;
  };
  auto set_args = std::make_shared<SetArgs>();
  CLI::App* set = g->add_subcommand(
      "set-bookie-rack",
      "Updates the rack placement information for a specific bookie in the cluster (note. bookie "
      "address format:`address:port`)");
  set->add_option("-b,--bookie", set_args->bookie, "Bookie address (format: `address:port`)")
      ->required();
  set->add_option("-r,--rack", set_args->rack,
                  "Bookie rack name: /rack, or /region/rack with the region-aware policy")
      ->required();
  set->add_option("-g,--group", set_args->group, "Bookie group name")->capture_default_str();
  set->add_option("--hostname", set_args->hostname, "Bookie host name");
  table.on(set, [set_args, set](Session& s) {
    std::string trimmed = set_args->rack;
    while (!trimmed.empty() && trimmed.back() == ' ') trimmed.pop_back();
    while (!trimmed.empty() && trimmed.front() == ' ') trimmed.erase(trimmed.begin());
    if (trimmed.empty() || trimmed == "/") {
      return s.argument_error("rack name is invalid, it should not be null, empty or '/'");
    }
    Json body = Json::object();
    body["rack"] = set_args->rack;
    if (set->count("--hostname") > 0) body["hostname"] = set_args->hostname;
    return s.change("POST",
                    rack_path(set_args->bookie) + "?group=" + encode_segment(set_args->group),
                    body.dump(-1, ' ', false, Json::error_handler_t::replace));
  });
}

}  // namespace magnetar::cli
