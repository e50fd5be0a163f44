package zguard

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/zlink-go/zlink/internal/zguard/tlstest"
)

// A TLS client that presents no certificate is refused as untrusted (not
// with crypto/tls's untyped "didn't provide a certificate").
func TestTLS_ClientWithoutCertificateIsUntrusted(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	scfg, srec := tlsFor(t, ca.Pool(), ca.Issue(t, meshID).TLS, meshID)
	router, addr := newRouter(t, scfg)
	defer router.Close()
	raw := dialRaw(t, addr)
	c := tls.Client(raw, &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true})
	_ = c.SetDeadline(time.Now().Add(waitDeadline))
	_ = c.Handshake() // TLS 1.3: the client's side may end before the server judged it
	_, _ = c.Read(make([]byte, 1))
	ev := srec.waitRejected(t, ErrTLSUntrusted)
	if ev.Remote != raw.LocalAddr().String() {
		t.Fatalf("rejected %v", ev)
	}
	raw.waitClosed(t)
}
