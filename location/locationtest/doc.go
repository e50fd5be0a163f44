// Package locationtest holds the conformance suite every location.Store
// implementation must pass (Run) and test harnesses: a real redis-server
// child process on a free loopback port that can be restarted on the same
// port (StartRedis), the same speaking TLS only with certificates made at
// test time (GenerateCerts, StartRedisTLS; Debian's redis-server is built
// with TLS), a fake clock for the in-memory store (FakeClock), and
// condition-wait helpers (WaitFor, NextEvent).
//
// Tests never skip because redis-server is missing: StartRedis fails the
// test with the reason (`make test` installs it). This package is imported
// only by tests; it must not touch anything outside the store under test.
package locationtest
