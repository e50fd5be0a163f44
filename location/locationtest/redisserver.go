package locationtest

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
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
	tls  *TLSOptions // nil: plain TCP
	// extra returns more redis-server arguments for the port (replica,
	// cluster); nil for none.
	extra func(port int) []string
	// clientTLS trusts the CA and presents the client certificate; used
	// by the readiness probe and handed out by TLSConfig.
	clientTLS *tls.Config

	mu   sync.Mutex // guards cmd, done, out
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	out  *syncBuffer
}

// startTimeout bounds waiting for a started redis-server to answer PING.
const startTimeout = 10 * time.Second

// TLSOptions configure a redis-server that speaks only TLS.
type TLSOptions struct {
	// Certs is the PKI the server uses (GenerateCerts). Required.
	Certs *Certs
	// AuthClients is redis-server's tls-auth-clients: "yes" (a client
	// certificate signed by Certs.CAFile is required), "optional" or "no".
	// Default "yes".
	AuthClients string
	// ACL holds extra ACL users, each a redis.conf `user` line without the
	// keyword, e.g. "zl on >secret ~* &* +@all". The default user stays
	// open unless a line redefines it ("default off").
	ACL []string
}

// StartRedis starts redis-server on a free 127.0.0.1 port and stops it at
// test cleanup.
func StartRedis(t testing.TB) *RedisServer {
	t.Helper()
	return startRedis(t, nil, nil)
}

// StartRedisTLS starts redis-server with TLS only (--port 0 --tls-port P)
// on a free 127.0.0.1 port and stops it at test cleanup. A plaintext
// client cannot talk to it.
func StartRedisTLS(t testing.TB, opt TLSOptions) *RedisServer {
	t.Helper()
	if opt.Certs == nil {
		t.Fatal("locationtest: StartRedisTLS without certificates")
	}
	if opt.AuthClients == "" {
		opt.AuthClients = "yes"
	}
	return startRedis(t, &opt, nil)
}

func startRedis(t testing.TB, opt *TLSOptions, extra func(port int) []string) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found in PATH (%v): run `make test`, which installs it, or `apt-get install -y redis-server`", err)
	}
	s := &RedisServer{bin: bin, dir: t.TempDir(), tls: opt, extra: extra}
	if opt != nil {
		s.clientTLS = opt.Certs.ClientTLS(t)
	}
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

// URL returns redis://Addr, or for a TLS server
// rediss://Addr?ca=CA&cert=CLIENT&key=CLIENTKEY.
func (s *RedisServer) URL() string {
	if s.tls == nil {
		return "redis://" + s.Addr()
	}
	q := url.Values{}
	q.Set("ca", s.tls.Certs.CAFile)
	q.Set("cert", s.tls.Certs.ClientCertFile)
	q.Set("key", s.tls.Certs.ClientKeyFile)
	return "rediss://" + s.Addr() + "?" + q.Encode()
}

// TLSConfig returns a client configuration for the server (trusting its
// CA, presenting the client certificate), or nil for a plain server.
func (s *RedisServer) TLSConfig() *tls.Config {
	if s.clientTLS == nil {
		return nil
	}
	return s.clientTLS.Clone()
}

// Certs returns the PKI of a TLS server, nil for a plain one.
func (s *RedisServer) Certs() *Certs {
	if s.tls == nil {
		return nil
	}
	return s.tls.Certs
}

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
// server starts empty (a replica then syncs from its master again).
func (s *RedisServer) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		t.Fatalf("locationtest: restart redis-server on %s: %v", s.Addr(), err)
	}
}

func (s *RedisServer) start() error {
	out := &syncBuffer{}
	args := []string{"--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--dir", s.dir, "--protected-mode", "no"}
	if s.tls == nil {
		args = append(args, "--port", strconv.Itoa(s.port))
	} else {
		c := s.tls.Certs
		args = append(args, "--port", "0", "--tls-port", strconv.Itoa(s.port),
			"--tls-cert-file", c.ServerCertFile, "--tls-key-file", c.ServerKeyFile,
			"--tls-ca-cert-file", c.CAFile, "--tls-auth-clients", s.tls.AuthClients)
		for _, u := range s.tls.ACL {
			args = append(args, "--user")
			args = append(args, strings.Fields(u)...)
		}
	}
	if s.extra != nil {
		args = append(args, s.extra(s.port)...)
	}
	cmd := exec.Command(s.bin, args...)
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
		if ping(s.Addr(), s.clientTLS) {
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

// ping sends an inline PING and expects +PONG (or -NOAUTH when the
// default user is off: the server is up), over TLS when cfg is set.
func ping(addr string, cfg *tls.Config) bool {
	var c net.Conn
	var err error
	d := &net.Dialer{Timeout: time.Second}
	if cfg != nil {
		c, err = tls.DialWithDialer(d, "tcp", addr, cfg)
	} else {
		c, err = d.Dial("tcp", addr)
	}
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	line = strings.TrimSpace(line)
	return err == nil && (line == "+PONG" || strings.HasPrefix(line, "-NOAUTH"))
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
