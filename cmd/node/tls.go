package main

import (
	"strings"

	"github.com/spf13/cobra"

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

// addTLSFlags registers --tls-ca, --tls-cert and --tls-key on the
// temporary node of a tool (request, spot): with them it can join a mesh
// whose links use TLS.
func addTLSFlags(c *cobra.Command, t *tlsFiles) {
	fs := c.Flags()
	fs.StringVar(&t.CA, "tls-ca", "", "mesh-link TLS: PEM CA bundle peers' certificates must chain to (with --tls-cert and --tls-key; needed to reach a TLS mesh)")
	fs.StringVar(&t.Cert, "tls-cert", "", "mesh-link TLS: PEM certificate of this tool's node; it must name the mesh's identity")
	fs.StringVar(&t.Key, "tls-key", "", "mesh-link TLS: PEM private key of --tls-cert")
}
