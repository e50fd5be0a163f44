package routemesh

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"

	"github.com/rs/zerolog"

	"github.com/zlink-go/zlink/internal/zguard"
	"github.com/zlink-go/zlink/routemesh/internal/transport"
	"github.com/zlink-go/zlink/wire"
)

// TLSConfig turns on TLS 1.3 with mutual authentication for a MeshNode's
// mesh links (its ROUTER and every pipe it dials). Each node presents its
// certificate and verifies the peer's: the chain must reach one of the
// CAs, and the identity the certificate names (its first URI SAN, or else
// its subject common name) must equal the identity of the node's own
// certificate. Host names and IP addresses are not checked. The node's
// security identity becomes "tls:<identity>:<fingerprint>" (see
// docs/security.md), so the handshake's admission rules apply to the
// certificate identity.
//
// Give the PEM files, or the same in memory (Roots, Certificate), which
// take precedence. Everything is loaded and checked at Start; a missing,
// unreadable or inconsistent setting is a *ConfigError (ErrInvalid).
type TLSConfig struct {
	// CAFile is a PEM bundle of the CAs peers' certificates must chain to;
	// at most 4 MiB (a larger file is refused without being read whole).
	CAFile string
	// CertFile and KeyFile are this node's PEM certificate (chain) and
	// private key. The certificate needs both the serverAuth and clientAuth
	// extended key usages (or none), and must chain to the CAs itself.
	// At most 1 MiB each.
	CertFile, KeyFile string
	// Roots, when set, replaces CAFile.
	Roots *x509.CertPool
	// Certificate, when set, replaces CertFile and KeyFile.
	Certificate *tls.Certificate
}

// Refusals of mesh links at the TLS layer. A refused connection's error
// (a dial's status LastError, the refusal logged once per endpoint)
// matches ErrTLS and one of the others with errors.Is.
var (
	// ErrTLS matches every TLS refusal of a mesh link.
	ErrTLS = zguard.ErrTLS
	// ErrTLSPlaintext: a TLS node met a peer that does not speak TLS.
	ErrTLSPlaintext = zguard.ErrTLSPlaintext
	// ErrTLSUntrusted: the peer's certificate is missing or does not chain
	// to the configured CAs (another CA, expired, wrong key usage).
	ErrTLSUntrusted = zguard.ErrTLSUntrusted
	// ErrTLSIdentity: the peer's certificate is trusted but names another
	// identity than this node's.
	ErrTLSIdentity = zguard.ErrTLSIdentity
	// ErrTLSPeerRefused: the peer refused this node's certificate.
	ErrTLSPeerRefused = zguard.ErrTLSPeerRefused
	// ErrTLSUnexpected: a node without TLS met a TLS node (dialed by it, or
	// dialing it).
	ErrTLSUnexpected = zguard.ErrTLSUnexpected
)

// maxTLSIdentity bounds a certificate identity (it travels in descriptors
// and handshakes).
const maxTLSIdentity = 512

// Caps on the PEM files TLS reads: reading stops at the cap, so a huge
// file (or /dev/zero) is refused at once.
const (
	maxCAFile   = 4 << 20 // a CA bundle
	maxCertFile = 1 << 20 // a certificate chain, a private key
)

// readPEM reads the file at path, refusing one larger than limit bytes
// without reading past the limit.
func readPEM(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %d MiB", path, limit>>20)
	}
	return b, nil
}

// load reads and checks the TLS settings; nil without TLS.
func (t *TLSConfig) load() (*zguard.TLS, error) {
	if t == nil {
		return nil, nil
	}
	roots := t.Roots
	if roots == nil {
		if t.CAFile == "" {
			return nil, errors.New("no CA: set CAFile (--tls-ca)")
		}
		pem, err := readPEM(t.CAFile, maxCAFile)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s: no PEM certificate", t.CAFile)
		}
	}
	var cert tls.Certificate
	if t.Certificate != nil {
		cert = *t.Certificate
	} else {
		if t.CertFile == "" || t.KeyFile == "" {
			return nil, errors.New("set both the certificate and the key files (--tls-cert, --tls-key)")
		}
		certPEM, err := readPEM(t.CertFile, maxCertFile)
		if err != nil {
			return nil, fmt.Errorf("certificate file: %w", err)
		}
		keyPEM, err := readPEM(t.KeyFile, maxCertFile)
		if err != nil {
			return nil, fmt.Errorf("key file: %w", err)
		}
		if cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
			return nil, fmt.Errorf("certificate %s / key %s: %w", t.CertFile, t.KeyFile, err)
		}
	}
	if len(cert.Certificate) == 0 {
		return nil, errors.New("empty certificate")
	}
	leaf := cert.Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("certificate: %w", err)
		}
	}
	id := zguard.CertIdentity(leaf)
	switch {
	case id == "":
		return nil, errors.New("the certificate names no identity (no URI SAN, no common name)")
	case len(id) > maxTLSIdentity:
		return nil, fmt.Errorf("certificate identity longer than %d bytes", maxTLSIdentity)
	}
	// A certificate the node's own CAs do not accept would be refused by
	// every peer: say so now.
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{u}}); err != nil {
			return nil, fmt.Errorf("this node's certificate %q is not valid for mesh links under the CAs given: %w", id, err)
		}
	}
	return zguard.NewTLS(zguard.TLSConfig{Roots: roots, Certificate: cert, PeerIdentity: id})
}

// security returns the node's trust profile and, with TLS, the transport's
// TLS settings. With TLS the profile is named after the certificate
// identity, and its key binds that identity and the shared secret (when
// one is set too): TLS authenticates the peer, the secret (optional) must
// match as well, and the security identity shows the certificate's.
func (c *Config) security() (wire.Trust, *zguard.TLS, error) {
	g, err := c.TLS.load()
	if err != nil {
		return wire.Trust{}, nil, &ConfigError{Mesh: c.Mesh, Err: ErrInvalid, Detail: "TLS: " + err.Error()}
	}
	if g == nil {
		return wire.NewTrust(c.Trust.Profile, c.Trust.Secret), nil, nil
	}
	h := sha256.New()
	lp := func(b []byte) {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(b))))
		h.Write(b)
	}
	lp([]byte("zlink-tls-trust-v1"))
	lp([]byte(g.Identity()))
	lp(c.Trust.Secret)
	return wire.NewTrust("tls:"+g.Identity(), h.Sum(nil)), g, nil
}

// SecurityIdentity returns the identity this node states in handshakes and
// descriptors: "tls:<certificate identity>:<fingerprint>" with TLS,
// "<profile>:<fingerprint>" with a shared secret, "none:anonymous"
// without either.
func (n *Node) SecurityIdentity() string { return n.trust.SecurityIdentity() }

// tlsLog logs TLS refusals of mesh links: a warning the first time per
// peer and kind of refusal, debug after (a peer retries every few
// seconds).
type tlsLog struct {
	log  zerolog.Logger
	mu   sync.Mutex
	seen map[string]struct{}
}

func newTLSLog(log zerolog.Logger) *tlsLog {
	return &tlsLog{log: log, seen: map[string]struct{}{}}
}

// refused is the transport's OnTLSRefused.
func (l *tlsLog) refused(r transport.TLSRefusal) {
	kind := tlsRefusalKind(r.Err)
	if kind == "tls_on_plaintext_port" && !r.Inbound {
		kind = "peer_requires_tls" // this plaintext node dialed a TLS port
	}
	peer := r.Peer
	if r.Inbound {
		if host, _, err := net.SplitHostPort(peer); err == nil {
			peer = host // a redial comes from a new port
		}
	}
	key := kind + "#" + peer
	l.mu.Lock()
	_, seen := l.seen[key]
	if !seen {
		if len(l.seen) >= 4096 { // bounded: a flood of strangers cannot grow it
			clear(l.seen)
		}
		l.seen[key] = struct{}{}
	}
	l.mu.Unlock()
	ev := l.log.Warn()
	if seen {
		ev = l.log.Debug()
	}
	ev.Str("peer", r.Peer).Bool("inbound", r.Inbound).Str("tls_refusal", kind).Err(r.Err).
		Msg("mesh link refused by TLS")
}

// tlsRefusalKind names the kind of a TLS refusal for logs.
func tlsRefusalKind(err error) string {
	switch {
	case errors.Is(err, ErrTLSPlaintext):
		return "plaintext_peer"
	case errors.Is(err, ErrTLSUntrusted):
		return "untrusted_certificate"
	case errors.Is(err, ErrTLSIdentity):
		return "wrong_identity"
	case errors.Is(err, ErrTLSPeerRefused):
		return "refused_by_peer"
	case errors.Is(err, ErrTLSUnexpected):
		return "tls_on_plaintext_port"
	default:
		return "tls"
	}
}
