package main

import (
	"strings"

	"github.com/zlink-go/zlink/routemesh"
)

// tlsFiles are the PEM files of mesh-link TLS: YAML `tls:` (for every mesh,
// or one mesh's own), flags --tls-ca, --tls-cert and --tls-key. All three
// or none.
type tlsFiles struct {
	// CA is the CA bundle peers' certificates must chain to.
	CA string `yaml:"ca"`
	// Cert and Key are this node's certificate and private key.
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// config returns the routemesh setting (nil when no file is named), or a
// usage error when only some are.
func (t *tlsFiles) config() (*routemesh.TLSConfig, error) {
	if t == nil || (t.CA == "" && t.Cert == "" && t.Key == "") {
		return nil, nil
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"--tls-ca", t.CA}, {"--tls-cert", t.Cert}, {"--tls-key", t.Key}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, usagef("mesh TLS needs --tls-ca, --tls-cert and --tls-key together (YAML tls: ca, cert, key); missing " +
			strings.Join(missing, ", "))
	}
	return &routemesh.TLSConfig{CAFile: t.CA, CertFile: t.Cert, KeyFile: t.Key}, nil
}
