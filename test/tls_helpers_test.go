package test

// Helpers of the mesh-link TLS tests: nodes with TLS (or without) whose
// logs are captured, and a TCP relay that records every byte it moves.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	zlink "github.com/zlink-go/zlink"
	"github.com/zlink-go/zlink/internal/zguard/tlstest"
	"github.com/zlink-go/zlink/routemesh"
)

const (
	tlsMesh   = "secure"
	tlsMeshID = "spiffe://zlink.test/mesh/secure"
)

// logLines is a zerolog sink whose JSON lines tests can search.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// entries returns the decoded lines whose message is msg.
func (l *logLines) entries(msg string) []map[string]any {
	l.mu.Lock()
	raw := l.buf.String()
	l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(raw, "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) == nil && e["message"] == msg {
			out = append(out, e)
		}
	}
	return out
}

// refusals returns the TLS refusals logged, and how many were warnings.
func (l *logLines) refusals(kind string, inbound bool) (all, warnings int) {
	for _, e := range l.entries("mesh link refused by TLS") {
		if e["tls_refusal"] == kind && e["inbound"] == inbound {
			all++
			if e["level"] == "warn" {
				warnings++
			}
		}
	}
	return all, warnings
}

// tlsNode starts a host with one manual node of tlsMesh, with TLS when tc is
// set, logging at debug level into the returned sink.
func tlsNode(t *testing.T, rid string, tc *routemesh.TLSConfig, setup func(*routemesh.MeshBuilder)) (*routemesh.Node, *logLines) {
	t.Helper()
	logs := &logLines{}
	o := zlink.NewOptions().SetLogger(zerolog.New(logs).Level(zerolog.DebugLevel))
	b := o.AddRouteMesh(tlsMesh).SetRoutingID(rid).ConfigureLiveness(fastLiveness)
	if tc != nil {
		b.SetTLS(*tc)
	}
	if setup != nil {
		setup(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := zlink.Start(ctx, o)
	if err != nil {
		t.Fatalf("start %s: %v", rid, err)
	}
	t.Cleanup(func() { stopHost(t, h) })
	return h.Mesh(tlsMesh), logs
}

// issue returns a TLS setting with a certificate for identity from ca,
// trusting ca.
func issue(t *testing.T, ca *tlstest.CA, identity string) *routemesh.TLSConfig {
	t.Helper()
	c := ca.Issue(t, identity)
	return &routemesh.TLSConfig{CAFile: ca.File, CertFile: c.CertFile, KeyFile: c.KeyFile}
}

// echoServer registers channel "echo" answering with the payload.
func echoServer(b *routemesh.MeshBuilder) {
	b.Channel("echo").Server().HandleRequest("echo", func(_ *routemesh.Context, p []byte) ([]byte, error) { return p, nil })
}

// peerError waits until n shows peer rid NotConnected with a last error
// containing want, and returns that error.
func peerError(t *testing.T, n *routemesh.Node, rid, want string) string {
	t.Helper()
	var last string
	waitFor(t, n.RID()+" shows "+rid+" refused with "+want, 10*time.Second, func() bool {
		p, ok := status(t, n).Peer(rid)
		last = p.LastError
		return ok && p.State == routemesh.PeerNotConnected && strings.Contains(p.LastError, want)
	})
	return last
}

// relay forwards loopback TCP connections to a target and records every
// byte it moves, both directions.
type relay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	seen   bytes.Buffer
	wg     sync.WaitGroup
	conns  []net.Conn
	closed bool
}

func newRelay(t *testing.T, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, target: strings.TrimPrefix(target, "tcp://")}
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(r.close)
	return r
}

func (r *relay) endpoint() string { return "tcp://" + r.ln.Addr().String() }

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", r.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			_, _ = c.Close(), up.Close()
			continue
		}
		r.conns = append(r.conns, c, up)
		r.wg.Add(2)
		r.mu.Unlock()
		go r.pipe(up, c)
		go r.pipe(c, up)
	}
}

// pipe copies src to dst, recording what passes.
func (r *relay) pipe(dst, src net.Conn) {
	defer r.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.mu.Lock()
			r.seen.Write(buf[:n])
			r.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err == io.EOF {
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
			}
			return
		}
	}
}

// captured returns a copy of every byte moved so far.
func (r *relay) captured() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.seen.Bytes())
}

func (r *relay) close() {
	_ = r.ln.Close()
	r.mu.Lock()
	r.closed = true
	for _, c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
