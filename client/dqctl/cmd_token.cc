// `dqctl token ...`: API tokens of producers (common/registry/api_tokens.h), needed by
// the API server when [server] require_token = yes (docs/security.md).
//   token add NAME --topics a,b|* [--admin]   prints the secret once (it is stored
//                                   hashed); --admin: it may also create, change
//                                   and delete those topics over HTTP
//   token list
//   token del NAME                  refused within a second by every API server
#include <cstdio>
#include <string>
#include <vector>

#include "client/dqctl/command.h"
#include "common/core/json.h"
#include "common/registry/api_tokens.h"

namespace dq::ctl {
// Its own namespace (not an anonymous one): dqctl's command files share unity
// batches, and each names its kCommand and kRegistered.
namespace token_command {

constexpr const char* kCommand = "token";

int add_token(const CtlOptions& options, ApiTokens& tokens, const std::string& name,
              const TokenScope& scope) {
  auto secret = tokens.create(name, scope);
  if (!secret.is_ok()) {
    return report_failure(secret.status());
  }
  if (options.json) {
    printf(
        "%s\n",
        Json{{"name", name}, {"topics", scope.text()}, {"admin", scope.admin}, {"token", *secret}}
            .dump(2)
            .c_str());
    return kExitOk;
  }
  printf("%s\n", secret->c_str());
  fprintf(stderr, "token %s added for topics %s%s; it is shown only this once\n", name.c_str(),
          scope.text().c_str(), scope.admin ? " with the admin scope" : "");
  return kExitOk;
}

int list_tokens(const CtlOptions& options, ApiTokens& tokens) {
  return print_listing(
      options, tokens.list(),
      [](const ApiToken& token) {
        return Json{{"name", token.name},
                    {"topics", token.scope.text()},
                    {"admin", token.scope.admin},
                    {"created_at_ms", token.created_at_ms}};
      },
      [](const std::vector<ApiToken>& listed) {
        std::vector<std::vector<std::string>> rows{{"NAME", "TOPICS", "ADMIN", "CREATED"}};
        for (const auto& token : listed) {
          rows.push_back({token.name, token.scope.text(), token.scope.admin ? "yes" : "no",
                          format_time(token.created_at_ms)});
        }
        print_rows(rows);
      });
}

int run_token_command(const CtlOptions& options, const std::vector<std::string>& args) {
  if (args.empty()) {
    return usage_error(kCommand, "needs add|list|del");
  }
  const std::string& sub = args[0];
  // --admin is a switch; the rest is NAME and --topics.
  std::vector<std::string> words;
  bool admin = false;
  for (const auto& arg : args) {
    if (arg == "--admin") {
      admin = true;
    } else {
      words.push_back(arg);
    }
  }
  if (admin && sub != "add") {
    return usage_error(kCommand, "--admin is for add");
  }
  NamedRowArgs parsed;
  std::string wrong = parse_named_row_args(words, 1, "--topics", &parsed);
  if (!wrong.empty()) {
    return usage_error(kCommand, wrong);
  }
  const std::string& name = parsed.name;
  const bool has_topics = parsed.option.has_value();
  const std::string topics = parsed.option.value_or("");
  TokenScope scope;
  if (sub == "list") {
    if (!name.empty() || has_topics) {
      return usage_error(kCommand, "token list takes no arguments");
    }
  } else if (sub == "add") {
    if (name.empty()) {
      return usage_error(kCommand, "token add needs NAME");
    }
    if (!has_topics) {
      return usage_error(kCommand, "token add needs --topics a,b (or '*')");
    }
    Status valid = validate_token_name(name);
    if (!valid.is_ok()) {
      return report_failure(valid);
    }
    auto parsed = parse_token_scope(topics);
    if (!parsed.is_ok()) {
      return report_failure(parsed.status());
    }
    scope = *parsed;
    scope.admin = admin;
  } else if (sub == "del") {
    if (name.empty()) {
      return usage_error(kCommand, "token del needs NAME");
    }
    if (has_topics) {
      return usage_error(kCommand, "--topics is for add");
    }
  } else {
    return usage_error(kCommand, "unknown subcommand '" + sub + "'");
  }
  return run_on_named_rows<ApiTokens>(
      options, sub, name, "token",
      [&](ApiTokens& tokens) { return add_token(options, tokens, name, scope); },
      [&](ApiTokens& tokens) { return list_tokens(options, tokens); });
}

constexpr const char* kUsage =
    "token add NAME --topics TOPIC[,TOPIC...]|'*' [--admin]   prints the new token once;\n"
    "          --admin: it may also create, change and delete those topics over HTTP\n"
    "token list\n"
    "token del NAME";
const CommandRegistration kRegistered(kCommand, kUsage, &run_token_command);

}  // namespace token_command
}  // namespace dq::ctl
