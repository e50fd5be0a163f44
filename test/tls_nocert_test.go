package test

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/internal/zguard/tlstest"
)

// A TLS peer that presents no client certificate is refused and logged
// as untrusted_certificate (not the generic tls kind).
func TestTLS_PeerWithoutCertificateIsUntrusted(t *testing.T) {
	ca := tlstest.NewCA(t, "mesh CA")
	tn, tlog := tlsNode(t, "tls", issue(t, ca, tlsMeshID), echoServer)
	c, err := tls.Dial("tcp", strings.TrimPrefix(tn.Endpoint(), "tcp://"),
		&tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true})
	if err == nil {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _ = c.Read(make([]byte, 1)) // the refusal arrives as an alert
		_ = c.Close()
	}
	waitFor(t, "the refusal of a peer without a certificate", 10*time.Second, func() bool {
		_, w := tlog.refusals("untrusted_certificate", true)
		return w == 1
	})
	if all, _ := tlog.refusals("tls", true); all != 0 {
		t.Fatalf("%d refusals logged with the generic kind", all)
	}
}
