// Command zlink-node runs one ZLink process from the command line: the
// `run` node, serving the admin HTTP API of package admin (status, tree,
// weight, drain, metrics, health, /ui), the operator tools that talk to
// any process serving that API (`status`, `tree`, `weight`, `drain`,
// `undrain`, `spot-owner`, `relocate`, `spot-move`), an ephemeral client
// (`request`, `spot`), the embedded `demo`, and the `bench` runner. The
// command line and the admin API are a public interface (docs/cli.md);
// they are tested as a black box in test/cli_test.go.
//
// It owns only the wiring from flags and the YAML config file to the
// public API of the root package, admin/, routemesh/, location/ and
// supervisor/, and the client side of the admin API. It must not reach
// into runtime internals, and it must not serve admin endpoints of its
// own: everything `run` serves comes from admin.API, the handler any
// embedding process serves too.
package main
