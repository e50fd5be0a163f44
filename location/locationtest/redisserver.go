package locationtest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// RedisServer is a real redis-server child process on a loopback port,
// without persistence. Tests never skip when redis-server is missing: they
// fail with the reason.
type RedisServer struct {
	bin  string
	dir  string
	port int

	mu   sync.Mutex // guards cmd, done, out
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	out  *syncBuffer
}

// startTimeout bounds waiting for a started redis-server to answer PING.
const startTimeout = 10 * time.Second

// StartRedis starts redis-server on a free 127.0.0.1 port and stops it at
// test cleanup.
func StartRedis(t testing.TB) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found in PATH (%v): run `make test`, which installs it, or `apt-get install -y redis-server`", err)
	}
	s := &RedisServer{bin: bin, dir: t.TempDir()}
	var lastErr error
	for range 3 { // the free port may be taken between probe and bind
		s.port, err = freePort()
		if err != nil {
			t.Fatalf("locationtest: pick a free port: %v", err)
		}
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("locationtest: start redis-server: %v", lastErr)
	return nil
}

// Addr returns host:port of the server (stable across Restart).
func (s *RedisServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL returns redis://Addr.
func (s *RedisServer) URL() string { return "redis://" + s.Addr() }

// Stop kills the server (like a crash: no persistence, all data lost) and
// waits for it to exit. Idempotent.
func (s *RedisServer) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Restart stops the server and starts a new one on the same port. The new
// server starts empty.
func (s *RedisServer) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		t.Fatalf("locationtest: restart redis-server on %s: %v", s.Addr(), err)
	}
}

func (s *RedisServer) start() error {
	out := &syncBuffer{}
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--dir", s.dir, "--protected-mode", "no")
	cmd.Stdout, cmd.Stderr = out, out
	configureChild(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if ping(s.Addr()) {
			s.mu.Lock()
			s.cmd, s.done, s.out = cmd, done, out
			s.mu.Unlock()
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("redis-server exited: %s", strings.TrimSpace(out.String()))
		case <-deadline.C:
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("redis-server on %s did not answer PING within %v: %s", s.Addr(), startTimeout, strings.TrimSpace(out.String()))
		case <-tick.C:
		}
	}
}

// ping sends an inline PING and expects +PONG.
func ping(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.TrimSpace(line) == "+PONG"
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 { // keep the head; enough to explain a failure
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
