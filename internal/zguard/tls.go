package zguard

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

// TLSConfig turns on TLS 1.3 with mutual authentication for every
// connection of a socket: both sides present a certificate, and each
// verifies the other's against Roots and, when PeerIdentity is set, the
// identity the certificate names (CertIdentity). Host names and addresses
// are not verified: what a peer proves is its certificate's identity.
type TLSConfig struct {
	// Roots are the CAs a peer's certificate must chain to. Required.
	Roots *x509.CertPool
	// Certificate is this side's certificate chain and private key,
	// presented as server (accepted connections) and as client (dialed
	// ones). Required. Node certificates carry both the serverAuth and
	// clientAuth extended key usages (or no extended key usage at all).
	Certificate tls.Certificate
	// PeerIdentity, when set, must equal CertIdentity of the peer's
	// certificate; otherwise any certificate Roots trust is accepted.
	PeerIdentity string
}

// TLS is a validated TLSConfig, ready for Config.TLS. It is immutable and
// safe for concurrent use by any number of sockets.
type TLS struct {
	server, client *tls.Config
	identity       string
}

// NewTLS checks c and prepares its server and client configurations. It
// fails with ErrInvalidConfig when Roots or the certificate is missing or
// the certificate cannot be parsed.
func NewTLS(c TLSConfig) (*TLS, error) {
	if c.Roots == nil {
		return nil, fmt.Errorf("%w: TLS without CA roots", ErrInvalidConfig)
	}
	if len(c.Certificate.Certificate) == 0 || c.Certificate.PrivateKey == nil {
		return nil, fmt.Errorf("%w: TLS without a certificate and key", ErrInvalidConfig)
	}
	leaf := c.Certificate.Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(c.Certificate.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%w: TLS certificate: %v", ErrInvalidConfig, err)
		}
	}
	cert := c.Certificate
	cert.Leaf = leaf
	t := &TLS{identity: CertIdentity(leaf)}
	t.server = &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		// Asked, not required by crypto/tls: a client without one is refused
		// by VerifyConnection, as untrusted (crypto/tls's own refusal is an
		// untyped error).
		ClientAuth:             tls.RequestClientCert,
		SessionTicketsDisabled: true, // every connection proves its certificate
		VerifyConnection:       verifyPeer(c.Roots, c.PeerIdentity, x509.ExtKeyUsageClientAuth),
	}
	t.client = &tls.Config{
		MinVersion: tls.VersionTLS13,
		// Go's own check would also match the server's certificate against
		// the dialed host; the mesh verifies the chain and the identity in
		// VerifyConnection instead, on every connection.
		InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &cert, nil
		},
		VerifyConnection: verifyPeer(c.Roots, c.PeerIdentity, x509.ExtKeyUsageServerAuth),
	}
	return t, nil
}

// Identity returns CertIdentity of this side's own certificate.
func (t *TLS) Identity() string { return t.identity }

// CertIdentity is the identity a certificate names: its first URI subject
// alternative name (e.g. spiffe://example.org/zlink/orders), or else its
// subject common name; "" when it has neither.
func CertIdentity(c *x509.Certificate) string {
	if c == nil {
		return ""
	}
	if len(c.URIs) > 0 {
		return c.URIs[0].String()
	}
	return c.Subject.CommonName
}

// verifyPeer returns the VerifyConnection check of one side: the peer's
// chain against roots for usage, then its identity.
func verifyPeer(roots *x509.CertPool, identity string, usage x509.ExtKeyUsage) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return &TLSError{Kind: ErrTLSUntrusted, Detail: "the peer presented no certificate"}
		}
		leaf := cs.PeerCertificates[0]
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}}
		if _, err := leaf.Verify(opts); err != nil {
			return &TLSError{Kind: ErrTLSUntrusted, Detail: fmt.Sprintf("certificate %q", CertIdentity(leaf)), Err: err}
		}
		if got := CertIdentity(leaf); identity != "" && got != identity {
			return &TLSError{Kind: ErrTLSIdentity, Detail: fmt.Sprintf("certificate names %q, want %q", got, identity)}
		}
		return nil
	}
}

// Sentinels of TLS refusals. Every *TLSError matches ErrTLS and its Kind.
var (
	// ErrTLS matches every TLS refusal.
	ErrTLS = errors.New("zlink: TLS refused")
	// ErrTLSPlaintext: a TLS side met a peer that does not speak TLS (a
	// plaintext mesh port or node).
	ErrTLSPlaintext = errors.New("zlink: TLS peer does not speak TLS")
	// ErrTLSUntrusted: the peer's certificate is missing, or does not chain
	// to the configured CAs (another CA, expired, wrong key usage).
	ErrTLSUntrusted = errors.New("zlink: TLS peer certificate not trusted")
	// ErrTLSIdentity: the peer's certificate is trusted but names another
	// identity than the one required.
	ErrTLSIdentity = errors.New("zlink: TLS peer certificate names another identity")
	// ErrTLSPeerRefused: the peer refused this side's certificate (it sent
	// a certificate alert), or closed the connection inside the TLS
	// handshake.
	ErrTLSPeerRefused = errors.New("zlink: TLS peer refused this side")
	// ErrTLSUnexpected: a side without TLS met a TLS peer: a plaintext
	// listener received a TLS handshake, or a plaintext dialer's peer
	// answered with TLS.
	ErrTLSUnexpected = errors.New("zlink: TLS handshake on a plaintext port")
)

// TLSError is the reason a connection was refused at the TLS layer. It
// matches ErrTLS and Kind with errors.Is; Unwrap returns the cause.
type TLSError struct {
	Kind   error  // ErrTLSPlaintext, ErrTLSUntrusted, ErrTLSIdentity, ErrTLSPeerRefused, ErrTLSUnexpected or ErrTLS
	Detail string // what was seen, for people
	Err    error  // the underlying error, or nil
}

func (e *TLSError) Error() string {
	var b strings.Builder
	b.WriteString(e.Kind.Error())
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Is matches ErrTLS and the error's Kind.
func (e *TLSError) Is(target error) bool { return target == ErrTLS || target == e.Kind }

// Unwrap returns the underlying error.
func (e *TLSError) Unwrap() error { return e.Err }

// handshakeTLS runs the TLS handshake of tc under deadline and classifies
// its failure.
func handshakeTLS(ctx context.Context, tc *tls.Conn, raw net.Conn, deadline time.Time) error {
	_ = raw.SetDeadline(deadline)
	err := tc.HandshakeContext(ctx)
	_ = raw.SetWriteDeadline(time.Time{})
	if err != nil {
		return classifyTLS(err)
	}
	return nil
}

// classifyTLS turns a handshake error into a *TLSError (or
// ErrHandshakeTimeout when the deadline passed).
func classifyTLS(err error) error {
	var te *TLSError
	if errors.As(err, &te) {
		return te
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: TLS: %v", ErrHandshakeTimeout, err)
	}
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) {
		detail := "the peer's first bytes are not a TLS record"
		if rh.RecordHeader[0] == sigHeader {
			detail = "the peer speaks plaintext ZMTP (a mesh node or port without TLS)"
		}
		return &TLSError{Kind: ErrTLSPlaintext, Detail: detail, Err: err}
	}
	var cve *tls.CertificateVerificationError
	if errors.As(err, &cve) {
		return &TLSError{Kind: ErrTLSUntrusted, Err: err}
	}
	if te := remoteAlert(err); te != nil {
		return te
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) {
		return &TLSError{Kind: ErrTLSPeerRefused, Detail: "the peer closed the connection during the TLS handshake", Err: err}
	}
	return &TLSError{Kind: ErrTLS, Err: err}
}

// remoteAlert classifies an alert the peer sent, or returns nil when err
// is not one.
func remoteAlert(err error) *TLSError {
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "remote error" {
		return nil
	}
	msg := oe.Err.Error()
	for _, s := range []string{"certificate", "unknown ca", "access denied"} {
		if strings.Contains(msg, s) {
			return &TLSError{Kind: ErrTLSPeerRefused, Detail: "the peer refused this side's certificate", Err: err}
		}
	}
	return &TLSError{Kind: ErrTLS, Detail: "the peer sent an alert", Err: err}
}

// looksLikeTLS reports whether b starts like a TLS handshake record (a
// ClientHello), which no ZMTP greeting does.
func looksLikeTLS(b []byte) bool { return len(b) > 0 && b[0] == 0x16 }

// looksLikeTLSRecord reports whether a peer's first byte starts a TLS alert
// or handshake record, where a ZMTP greeting starts with 0xFF.
func looksLikeTLSRecord(b byte) bool { return b == 0x15 || b == 0x16 }

// tlsAlert is a fatal TLS alert record (protocol_version). A TLS listener
// answers a plaintext ZMTP greeting with it, so the plaintext side knows at
// once that it reached a TLS port (its greeting starts 0xFF, never 0x15).
var tlsAlert = []byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46}

// answeredWithTLS is the refusal of a plaintext dialer whose peer answered
// its greeting with a TLS record.
func answeredWithTLS() error {
	return &TLSError{Kind: ErrTLSUnexpected, Detail: "the peer answered with TLS: its mesh port requires TLS and this node has none"}
}

// zmtpSignature is the first 10 bytes of every ZMTP 3 greeting. A
// plaintext listener answers a TLS ClientHello with it, so the TLS side
// knows at once that it reached a plaintext port.
var zmtpSignature = []byte{sigHeader, 0, 0, 0, 0, 0, 0, 0, 1, sigFooter}
