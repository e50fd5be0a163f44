package benchrun

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/zlink-go/zlink/routemesh"
)

// zlink-tls: the ZLink implementation with TLS 1.3 and mutual
// authentication on the mesh link, beside plaintext ZLink in the same
// rounds, so the report shows what TLS costs (its "TLS ÷ plain" lines).

func init() {
	cmpImpls["zlink-tls"] = cmpImpl{
		name:  "zlink-tls",
		label: "ZLink TLS",
		about: "as zlink, with TLS 1.3 and mutual authentication on the mesh link (certificates made for the run)",
		serve: cmpServeZlink,
		dial: func(ctx context.Context, endpoint string, o cmpDialOpts) (cmpClient, error) {
			t := cmpTLSConfig(o.tlsDir)
			if t == nil {
				return nil, fmt.Errorf("benchrun: compare: zlink-tls without its TLS files")
			}
			return cmpDialZlink(ctx, cmpClientRID, map[string]string{cmpServerRID: endpoint}, t)
		},
	}
}

// The files cmpWriteTLSFiles writes: one CA and one certificate naming the
// mesh's identity, which both nodes present.
const (
	cmpTLSCA   = "ca.pem"
	cmpTLSCert = "node.pem"
	cmpTLSKey  = "node-key.pem"
)

// cmpTLSConfig is the mesh TLS of dir's files; nil when dir is "".
func cmpTLSConfig(dir string) *routemesh.TLSConfig {
	if dir == "" {
		return nil
	}
	return &routemesh.TLSConfig{CAFile: filepath.Join(dir, cmpTLSCA),
		CertFile: filepath.Join(dir, cmpTLSCert), KeyFile: filepath.Join(dir, cmpTLSKey)}
}

// cmpWriteTLSFiles makes a CA and a node certificate for the run (ECDSA
// P-256, valid for a day, both extended key usages a mesh link needs) and
// writes them into dir.
func cmpWriteTLSFiles(dir string) error {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "zlink bench compare CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "bench-compare"},
		URIs:      []*url.URL{{Scheme: "zlink", Host: "bench-compare"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name, typ string
		der       []byte
	}{{cmpTLSCA, "CERTIFICATE", caDER}, {cmpTLSCert, "CERTIFICATE", leafDER}, {cmpTLSKey, "EC PRIVATE KEY", keyDER}} {
		b := pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der})
		if err := os.WriteFile(filepath.Join(dir, f.name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// cmpInverse is the statistic of 1/x from that of x: the range swaps
// ends, and the median of the inverses is the inverse of the median (for
// an odd count of rounds, as by default; close to it for an even one).
func cmpInverse(s CmpStat) CmpStat {
	if s.N == 0 || s.Median == 0 || s.Min == 0 || s.Max == 0 {
		return CmpStat{}
	}
	return CmpStat{N: s.N, Median: 1 / s.Median, Min: 1 / s.Max, Max: 1 / s.Min}
}

// cmpTLSCost is "TLS ÷ plain" of a scenario's zlink-tls summary: its
// ratios to ZLink inverted.
func cmpTLSCost(im CmpImplSummary) CmpRatios {
	v := im.VsZlink
	return CmpRatios{Rate: cmpInverse(v.Rate), P50: cmpInverse(v.P50), P99: cmpInverse(v.P99), CPU: cmpInverse(v.CPU)}
}
