package transport_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zlink-go/zlink/internal/zguard"
	"github.com/zlink-go/zlink/internal/zguard/tlstest"
	"github.com/zlink-go/zlink/routemesh/internal/transport"
)

const meshID = "spiffe://zlink.test/mesh/t"

// newTLS issues a certificate for identity from ca and requires peer.
func newTLS(t *testing.T, ca *tlstest.CA, identity, peer string) *zguard.TLS {
	t.Helper()
	tl, err := zguard.NewTLS(zguard.TLSConfig{Roots: ca.Pool(), Certificate: ca.Issue(t, identity).TLS, PeerIdentity: peer})
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

type refusals struct {
	mu   sync.Mutex
	list []transport.TLSRefusal
}

func (r *refusals) add(x transport.TLSRefusal) {
	r.mu.Lock()
	r.list = append(r.list, x)
	r.mu.Unlock()
}

func (r *refusals) has(inbound bool, kind error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.list {
		if x.Inbound == inbound && errors.Is(x.Err, kind) {
			return true
		}
	}
	return false
}

// Refusals at the TLS layer reach OnTLSRefused on both sides, typed.
func TestZMQ_TLSRefusals(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ca := tlstest.NewCA(t, "mesh CA")
	mk := func(tl *zguard.TLS, r *refusals) *transport.ZMQ {
		cfg := transport.ZMQConfig{Guard: zguard.DefaultConfig(), ListenerID: "router/test", DialTimeout: 2 * time.Second,
			OnTLSRefused: r.add}
		cfg.Guard.TLS = tl
		return transport.NewZMQ(ctx, cfg)
	}
	var lr, dr refusals
	ln, err := mk(newTLS(t, ca, meshID, meshID), &lr).Listen("tcp://127.0.0.1:0", transport.Events{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ep := "tcp://" + ln.Addr().String()

	// Plaintext dialer: the TLS listener refuses it.
	if c, err := mk(nil, &dr).Dial(ctx, ep, "plain"); err == nil {
		_ = c.Close()
		t.Fatal("plaintext dial to a TLS listener succeeded")
	}
	waitFor(t, "inbound ErrTLSPlaintext", func() bool { return lr.has(true, zguard.ErrTLSPlaintext) })

	// Another identity: refused by the dialer itself, reported outbound.
	_, err = mk(newTLS(t, ca, "spiffe://zlink.test/mesh/other", "spiffe://zlink.test/mesh/other"), &dr).Dial(ctx, ep, "other")
	if !errors.Is(err, zguard.ErrTLSIdentity) {
		t.Fatalf("dial err = %v, want ErrTLSIdentity", err)
	}
	if !dr.has(false, zguard.ErrTLSIdentity) {
		t.Fatal("outbound refusal not reported")
	}
	waitFor(t, "inbound ErrTLSPeerRefused", func() bool { return lr.has(true, zguard.ErrTLSPeerRefused) })
}
