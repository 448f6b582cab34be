// `streamctl auth`: the lines of the broker's access file (docs/SECURITY.md §The access file), made on
// the machine that writes it — no broker is asked. `auth token NAME` makes a token (or takes one on
// stdin with --stdin) and prints its "token NAME sha256:…" line, with --scram also the SCRAM-SHA-256
// and -512 credentials of the same secret for Kafka clients; the token itself goes to stderr (or in
// the --json object), to hand to the client: the file never holds it. `auth migrate FILE` rewrites a
// token file of the format from before digests ("read|write|admin TOKEN" lines) as digests and
// grants, to stdout or, with --in-place, into FILE itself (mode 600, replaced atomically).
#pragma once

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}

namespace streamd::streamctl {

struct ChosenCommand;

// Registers `auth token` and `auth migrate` on `app`.
void add_auth_command(CLI::App& app, ChosenCommand& chosen);

}  // namespace streamd::streamctl
