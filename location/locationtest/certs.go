package locationtest

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"testing"

	"github.com/zlink-go/zlink/internal/zguard/tlstest"
)

// Certs is a throw-away PKI generated at test time: a CA, a server
// certificate for 127.0.0.1 and a client certificate, both signed by the
// CA, and a second, unrelated CA that trusts nothing of the first. Files
// are PEM in a test temp directory.
type Certs struct {
	CAFile         string // the CA certificate that signed server and client
	ServerCertFile string // server certificate, IP SAN 127.0.0.1, DNS SAN localhost
	ServerKeyFile  string
	ClientCertFile string // client certificate (ExtKeyUsageClientAuth)
	ClientKeyFile  string
	// OtherCAFile is a CA that signed neither certificate: a client
	// trusting only it must refuse the server.
	OtherCAFile string
}

// GenerateCerts writes a fresh PKI into a temp directory of t. ECDSA P-256
// keys keep it fast (a few milliseconds).
func GenerateCerts(t testing.TB) *Certs {
	t.Helper()
	ca := tlstest.NewCA(t, "zlink test CA")
	other := tlstest.NewCA(t, "zlink other CA")
	server := ca.IssueTemplate(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "redis-server"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	client := ca.IssueTemplate(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "zlink-node"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	return &Certs{
		CAFile: ca.File, OtherCAFile: other.File,
		ServerCertFile: server.CertFile, ServerKeyFile: server.KeyFile,
		ClientCertFile: client.CertFile, ClientKeyFile: client.KeyFile,
	}
}

// ClientTLS returns a client configuration trusting the CA and presenting
// the client certificate.
func (c *Certs) ClientTLS(t testing.TB) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("locationtest: no certificate in %s", c.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(c.ClientCertFile, c.ClientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}
