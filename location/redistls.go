package location

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/url"
	"os"
)

// TLS query parameters of a rediss:// URL (see ParseRedisURL).
const (
	tlsParamCA         = "ca"
	tlsParamCert       = "cert"
	tlsParamKey        = "key"
	tlsParamServerName = "servername"
)

// maxPEMFile bounds a CA bundle or certificate file read for TLS.
const maxPEMFile = 1 << 20

// tlsFiles are the file-based TLS settings of a rediss:// URL.
type tlsFiles struct {
	caFile, certFile, keyFile, serverName string
}

func tlsFilesFromQuery(q url.Values) (tlsFiles, error) {
	var f tlsFiles
	for name, vals := range q {
		if len(vals) != 1 {
			return tlsFiles{}, invalidf("parameter %q given %d times", name, len(vals))
		}
		switch name {
		case tlsParamCA:
			f.caFile = vals[0]
		case tlsParamCert:
			f.certFile = vals[0]
		case tlsParamKey:
			f.keyFile = vals[0]
		case tlsParamServerName:
			f.serverName = vals[0]
		default:
			return tlsFiles{}, invalidf("unknown parameter %.64q (known: ca, cert, key, servername, addr)", name)
		}
	}
	if (f.certFile == "") != (f.keyFile == "") {
		return tlsFiles{}, invalidf("cert and key must be given together")
	}
	return f, nil
}

// config loads the files into a client *tls.Config: TLS 1.2 or later, the
// CA bundle as the only roots (system roots when none), and the client
// certificate if any.
func (f tlsFiles) config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.serverName}
	if f.caFile != "" {
		pem, err := readPEMFile(f.caFile)
		if err != nil {
			return nil, invalidf("tls ca file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, invalidf("tls ca file %s: no PEM certificate", f.caFile)
		}
		cfg.RootCAs = pool
	}
	if f.certFile != "" {
		certPEM, err := readPEMFile(f.certFile)
		if err != nil {
			return nil, invalidf("tls cert file: %v", err)
		}
		keyPEM, err := readPEMFile(f.keyFile)
		if err != nil {
			return nil, invalidf("tls key file: %v", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, invalidf("tls cert %s and key %s: %v", f.certFile, f.keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func readPEMFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxPEMFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxPEMFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxPEMFile)
	}
	return b, nil
}
