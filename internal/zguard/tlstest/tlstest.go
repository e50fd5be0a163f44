// Package tlstest generates the certificates of mesh-link TLS tests at test
// time: a CA, and node certificates naming an identity (a URI SAN, or a
// common name), written as PEM files into a temporary directory. ECDSA
// P-256 keys keep it fast (a few milliseconds per certificate).
//
// It is test support only: production certificates come from the
// operator's own PKI.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority of one test.
type CA struct {
	// File is the CA certificate as PEM.
	File string

	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
}

// Cert is a node certificate and its key.
type Cert struct {
	CertFile, KeyFile string          // PEM files
	TLS               tls.Certificate // the same, loaded (Leaf set)
}

var seq atomic.Uint64

// NewCA creates a CA named name in a temporary directory of t.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{cert: cert, key: key, dir: t.TempDir()}
	ca.File = filepath.Join(ca.dir, "ca.pem")
	writePEM(t, ca.File, "CERTIFICATE", der)
	return ca
}

// Cert returns the CA certificate.
func (ca *CA) Cert() *x509.Certificate { return ca.cert }

// Pool returns a pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Issue creates a node certificate for identity: a URI SAN when identity
// contains "://", else the subject common name. It carries both the
// serverAuth and clientAuth extended key usages.
func (ca *CA) Issue(t testing.TB, identity string) Cert {
	t.Helper()
	tmpl := &x509.Certificate{ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	if strings.Contains(identity, "://") {
		u, err := url.Parse(identity)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = []*url.URL{u}
		tmpl.Subject = pkix.Name{CommonName: "zlink node"}
	} else {
		tmpl.Subject = pkix.Name{CommonName: identity}
	}
	return ca.IssueTemplate(t, tmpl)
}

// IssueTemplate signs tmpl (serial number, validity and key usage are
// filled in unless set) and writes it with a fresh key.
func (ca *CA) IssueTemplate(t testing.TB, tmpl *x509.Certificate) Cert {
	t.Helper()
	key := newKey(t)
	tmpl.SerialNumber = serial(t)
	if tmpl.NotBefore.IsZero() {
		tmpl.NotBefore = time.Now().Add(-time.Hour)
	}
	if tmpl.NotAfter.IsZero() {
		tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	}
	if tmpl.KeyUsage == 0 {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	n := seq.Add(1)
	c := Cert{
		CertFile: filepath.Join(ca.dir, "node-"+strconv.FormatUint(n, 10)+".pem"),
		KeyFile:  filepath.Join(ca.dir, "node-"+strconv.FormatUint(n, 10)+"-key.pem"),
	}
	writePEM(t, c.CertFile, "CERTIFICATE", der)
	writePEM(t, c.KeyFile, "PRIVATE KEY", keyDER)
	c.TLS, err = tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
