package zguard

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/zlink-go/zlink/internal/zguard/tlstest"
)

const meshID = "spiffe://zlink.test/mesh/a"

// tlsFor returns a Config with TLS from cert, trusting roots and requiring
// the peer identity id ("" = any trusted), and a recorder on it.
func tlsFor(t testing.TB, roots *x509.CertPool, cert tls.Certificate, id string) (Config, *recorder) {
	t.Helper()
	tl, err := NewTLS(TLSConfig{Roots: roots, Certificate: cert, PeerIdentity: id})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	cfg := rec.install(DefaultConfig())
	cfg.TLS = tl
	return cfg, rec
}

// dialErr dials a DEALER that must fail and returns why.
func dialErr(t *testing.T, cfg Config, addr string) error {
	t.Helper()
	Register()
	d := zmq4.NewDealer(WithConfig(context.Background(), cfg), zmq4.WithID(zmq4.SocketIdentity("d")),
		zmq4.WithDialerMaxRetries(0), zmq4.WithLogger(discardLogger()))
	defer d.Close()
	var err error
	within(t, "dial that must fail", func() error {
		if err = d.Dial(Scheme + "://" + addr); err == nil {
			return errors.New("dial succeeded")
		}
		return nil
	})
	return err
}

func TestTLS_MutualExchange(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	scfg, srec := tlsFor(t, ca.Pool(), ca.Issue(t, meshID).TLS, meshID)
	dcfg, _ := tlsFor(t, ca.Pool(), ca.Issue(t, meshID).TLS, meshID)
	if scfg.TLS.Identity() != meshID {
		t.Fatalf("Identity() = %q", scfg.TLS.Identity())
	}
	router, addr := newRouter(t, scfg)
	defer router.Close()
	dealer := newDealer(t, dcfg, "d1", addr)
	defer dealer.Close()
	exchange(t, router, dealer, "d1")
	// A second peer with a certificate naming the identity by CN (the
	// requirement is the identity string, whichever field names it).
	ccfg, _ := tlsFor(t, ca.Pool(), ca.Issue(t, "plain-cn-id").TLS, "")
	if ccfg.TLS.Identity() != "plain-cn-id" {
		t.Fatalf("CN identity = %q", ccfg.TLS.Identity())
	}
	if _, rejected := srec.snapshot(); len(rejected) != 0 {
		t.Fatalf("rejected %v", rejected)
	}
}

// A TLS listener refuses a plaintext ZMTP peer; the dialer fails too, and
// says the port requires TLS.
func TestTLS_ListenerRefusesPlaintext(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	scfg, srec := tlsFor(t, ca.Pool(), ca.Issue(t, meshID).TLS, meshID)
	router, addr := newRouter(t, scfg)
	defer router.Close()
	// The plaintext dialer learns at once that the port needs TLS.
	if err := dialErr(t, DefaultConfig(), addr); !errors.Is(err, ErrTLSUnexpected) || !strings.Contains(err.Error(), "requires TLS") {
		t.Fatalf("plaintext dial err = %v, want ErrTLSUnexpected (the port requires TLS)", err)
	}
	ev := srec.waitRejected(t, ErrTLSPlaintext)
	if !errors.Is(ev.Reason, ErrTLS) || !strings.Contains(ev.Reason.Error(), "plaintext ZMTP") {
		t.Fatalf("reason %v", ev.Reason)
	}
}

// A TLS dialer refuses a plaintext listener at once ("not TLS"), and the
// plaintext listener says a TLS peer knocked.
func TestTLS_DialerRefusesPlaintext(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	rec := newRecorder()
	router, addr := newRouter(t, rec.install(DefaultConfig()))
	defer router.Close()
	dcfg, _ := tlsFor(t, ca.Pool(), ca.Issue(t, meshID).TLS, meshID)
	err := dialErr(t, dcfg, addr)
	if !errors.Is(err, ErrTLSPlaintext) || !errors.Is(err, ErrTLS) || !strings.Contains(err.Error(), "plaintext ZMTP") {
		t.Fatalf("dial err = %v, want ErrTLSPlaintext", err)
	}
	rec.waitRejected(t, ErrTLSUnexpected)
}

// Certificates from another CA are refused on both sides, whichever side
// holds the stranger.
func TestTLS_OtherCA(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	other := tlstest.NewCA(t, "other CA")
	t.Run("server from another CA", func(t *testing.T) {
		scfg, srec := tlsFor(t, other.Pool(), other.Issue(t, meshID).TLS, meshID)
		router, addr := newRouter(t, scfg)
		defer router.Close()
		dcfg, _ := tlsFor(t, ca.Pool(), ca.Issue(t, meshID).TLS, meshID)
		if err := dialErr(t, dcfg, addr); !errors.Is(err, ErrTLSUntrusted) {
			t.Fatalf("dial err = %v, want ErrTLSUntrusted", err)
		}
		srec.waitRejected(t, ErrTLSPeerRefused)
	})
	t.Run("client from another CA", func(t *testing.T) {
		// The client trusts the server (so its TLS 1.3 handshake ends
		// before the server has judged it): the server's refusal comes as
		// an alert on the client's first read.
		scfg, srec := tlsFor(t, ca.Pool(), ca.Issue(t, meshID).TLS, meshID)
		router, addr := newRouter(t, scfg)
		defer router.Close()
		dcfg, _ := tlsFor(t, ca.Pool(), other.Issue(t, meshID).TLS, meshID)
		if err := dialErr(t, dcfg, addr); !errors.Is(err, ErrTLSPeerRefused) {
			t.Fatalf("dial err = %v, want ErrTLSPeerRefused", err)
		}
		ev := srec.waitRejected(t, ErrTLSUntrusted)
		var uae x509.UnknownAuthorityError
		if !errors.As(ev.Reason, &uae) {
			t.Fatalf("reason %v, want an x509.UnknownAuthorityError inside", ev.Reason)
		}
	})
}

func TestTLS_WrongIdentity(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	scfg, srec := tlsFor(t, ca.Pool(), ca.Issue(t, meshID).TLS, meshID)
	router, addr := newRouter(t, scfg)
	defer router.Close()
	const otherID = "spiffe://zlink.test/mesh/b"
	dcfg, _ := tlsFor(t, ca.Pool(), ca.Issue(t, otherID).TLS, otherID)
	err := dialErr(t, dcfg, addr)
	if !errors.Is(err, ErrTLSIdentity) || !strings.Contains(err.Error(), meshID) {
		t.Fatalf("dial err = %v, want ErrTLSIdentity naming %s", err, meshID)
	}
	srec.waitRejected(t, ErrTLSPeerRefused)

	// The server checks too: a client that requires nothing but presents
	// another identity.
	dcfg, _ = tlsFor(t, ca.Pool(), ca.Issue(t, otherID).TLS, "")
	_ = dialErr(t, dcfg, addr)
	srec.waitRejected(t, ErrTLSIdentity)
}

// The ZMTP guards still apply inside TLS: a huge frame header is refused
// before allocation, and a peer silent after its TLS handshake is closed at
// the handshake deadline.
func TestTLS_GuardsApplyInside(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	scfg, srec := tlsFor(t, ca.Pool(), ca.Issue(t, meshID).TLS, meshID)
	scfg.HandshakeTimeout = 300 * time.Millisecond
	scfg.MaxFrame = 1 << 10
	router, addr := newRouter(t, scfg)
	defer router.Close()
	ccfg, _ := tlsFor(t, ca.Pool(), ca.Issue(t, meshID).TLS, meshID)

	tlsPeer := func() *rawPeer {
		raw := dialRaw(t, addr)
		tc := tls.Client(raw, ccfg.TLS.client)
		_ = tc.SetDeadline(time.Now().Add(waitDeadline))
		if err := tc.Handshake(); err != nil {
			t.Fatalf("TLS handshake: %v", err)
		}
		_ = tc.SetDeadline(time.Time{})
		return &rawPeer{tc}
	}
	big := tlsPeer()
	big.handshake(t, "big")
	big.write(t, []byte{flagLong, 0, 0, 1, 0, 0, 0, 0, 0}) // 1 TiB
	srec.waitRejected(t, ErrFrameTooLarge)
	big.waitClosed(t)

	silent := tlsPeer()
	srec.waitRejected(t, ErrHandshakeTimeout)
	silent.waitClosed(t)
}

func TestTLS_NewTLSInvalid(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	cert := ca.Issue(t, meshID).TLS
	for name, c := range map[string]TLSConfig{
		"no roots": {Certificate: cert},
		"no cert":  {Roots: ca.Pool()},
		"no key":   {Roots: ca.Pool(), Certificate: tls.Certificate{Certificate: cert.Certificate}},
		"bad cert": {Roots: ca.Pool(), Certificate: tls.Certificate{Certificate: [][]byte{{1, 2}}, PrivateKey: cert.PrivateKey}},
	} {
		if _, err := NewTLS(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", name, err)
		}
	}
}

func TestTLSError(t *testing.T) {
	cause := errors.New("cause")
	err := error(&net.OpError{Op: "read", Err: &TLSError{Kind: ErrTLSIdentity, Detail: "d", Err: cause}})
	if !errors.Is(err, ErrTLS) || !errors.Is(err, ErrTLSIdentity) || errors.Is(err, ErrTLSUntrusted) || !errors.Is(err, cause) {
		t.Fatalf("matching of %v", err)
	}
	if got := (&TLSError{Kind: ErrTLSIdentity, Detail: "d", Err: cause}).Error(); got != ErrTLSIdentity.Error()+": d: cause" {
		t.Fatalf("Error() = %q", got)
	}
}
