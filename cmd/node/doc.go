// Command zlink-node runs one ZLink process from the command line: the
// `run` node with its admin HTTP API (status, tree, weight, drain, metrics,
// health), the operator tools that talk to it (`status`, `tree`, `weight`,
// `drain`), an ephemeral client (`request`), the embedded `demo`, and the
// `bench` runner. The command line and the admin API are a public interface
// (docs/cli.md); they are tested as a black box in test/cli_test.go.
//
// It owns only the wiring from flags, the YAML config file and HTTP to the
// public API of the root package, routemesh/, location/ and supervisor/.
// It must not reach into runtime internals: everything it shows comes from
// Node.Status and Host.Tree snapshots.
package main
