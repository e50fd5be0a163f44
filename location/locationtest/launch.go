package locationtest

import (
	"errors"
	"fmt"
	"os/exec"
)

// LaunchRedis starts a redis-server like StartRedis, outside a test: dir
// holds its files and the caller stops it (Stop). It is for harnesses
// that run without a testing.TB, such as `zlink-node bench faults`.
func LaunchRedis(dir string) (*RedisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found in PATH (%w): `make deps` installs it", err)
	}
	s := &RedisServer{bin: bin, dir: dir}
	var lastErr error
	for range 3 { // the free port may be taken between probe and bind
		if s.port, err = freePort(); err != nil {
			return nil, fmt.Errorf("locationtest: pick a free port: %w", err)
		}
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("locationtest: start redis-server: %w", lastErr)
}

// ErrRunning is returned by Start when the server is already running.
var ErrRunning = errors.New("locationtest: redis-server already running")

// Start starts a stopped server again on the same port, empty (Restart
// without a test).
func (s *RedisServer) Start() error {
	s.mu.Lock()
	running := s.cmd != nil
	s.mu.Unlock()
	if running {
		return ErrRunning
	}
	return s.start()
}

// Do sends one command to the server and returns its reply like Command,
// or the error (an error reply included), outside a test.
func (s *RedisServer) Do(args ...string) (string, error) {
	return command(s.Addr(), s.clientTLS, args...)
}
