// Package examples holds small runnable programs that use ZLink the way an
// application does. Each one is a main package in its own directory:
//
//	go run ./examples/hello    two MeshNodes: a channel call and a Node-direct call
//	go run ./examples/typed    a typed channel request over three weighted Servers, drain and undrain
//	go run ./examples/fanout   classic fanout: one publisher, one subscriber
//	go run ./examples/lobby    a small game back end: lobby, two match Servers, fanout events, a drain
//	go run ./examples/room     Spots: typed async calls to players, a deferred reply, timers
//	go run ./examples/embedded a game process serving the admin API (package admin) for zlink-node and /ui
//
// They bind only 127.0.0.1 on ports the kernel picks, wait for readiness
// with WaitReady instead of retrying, and end by themselves — except
// embedded, a server that runs until SIGINT or SIGTERM. `make test`
// builds and runs every one (each has a test that runs it with a
// deadline; test/embedded_test.go drives embedded with zlink-node).
package examples
