package location

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// RedisConfig configures NewRedis. Zero fields take the defaults of
// DefaultRedisConfig.
type RedisConfig struct {
	// Addr is host:port of a standalone Redis or any Redis Cluster node.
	// Required.
	Addr string
	// DB is the database number (standalone only). Default 0.
	DB int
	// Username and Password authenticate with AUTH when set (Redis 6+
	// ACL user, or Password alone for requirepass).
	Username string
	Password string
	// TLS, when set, makes every connection TLS with this configuration
	// (NewRedis clones it; an empty ServerName is taken from the host of
	// the address dialled, and verified against the server certificate).
	// nil means plain TCP. InsecureSkipVerify is refused unless
	// VerifyConnection or VerifyPeerCertificate does the verification.
	// ParseRedisURL sets it for rediss:// URLs. Default nil.
	TLS *tls.Config
	// Prefix starts every key. Default "zlink".
	Prefix string
	// PollInterval is how often Watch re-lists descriptors to detect
	// expired leases and recover lost pushes. Default 1s.
	PollInterval time.Duration
	// DialTimeout bounds connecting to Redis. Default 5s.
	DialTimeout time.Duration
	// OpTimeout bounds each operation whose ctx has no deadline, so no call
	// hangs while Redis is unreachable. Default 5s.
	OpTimeout time.Duration
	// Logger receives a warning the first time a corrupted record is
	// skipped or refused under a given key (later ones of that key at
	// debug level). Default: the zero Logger, which logs nothing.
	Logger zerolog.Logger
}

// DefaultRedisConfig returns the defaults (Addr is left empty).
func DefaultRedisConfig() RedisConfig {
	return RedisConfig{
		Prefix:       "zlink",
		PollInterval: DefaultPollInterval,
		DialTimeout:  5 * time.Second,
		OpTimeout:    5 * time.Second,
	}
}

func (c RedisConfig) withDefaults() RedisConfig {
	d := DefaultRedisConfig()
	if c.Prefix == "" {
		c.Prefix = d.Prefix
	}
	if c.PollInterval == 0 {
		c.PollInterval = d.PollInterval
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = d.DialTimeout
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = d.OpTimeout
	}
	return c
}

func (c RedisConfig) validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return invalidf("redis addr %q: %v", c.Addr, err)
	}
	if c.DB < 0 {
		return invalidf("redis db %d", c.DB)
	}
	if strings.ContainsAny(c.Prefix, "{}") {
		return invalidf("redis key prefix %q contains a hash-tag brace", c.Prefix)
	}
	if c.PollInterval < 0 || c.DialTimeout < 0 || c.OpTimeout < 0 {
		return invalidf("negative redis timeout")
	}
	if c.TLS != nil && c.TLS.InsecureSkipVerify && c.TLS.VerifyConnection == nil && c.TLS.VerifyPeerCertificate == nil {
		return invalidf("redis TLS: InsecureSkipVerify without a verification callback; give the server's CA instead")
	}
	return nil
}

// ParseRedisURL parses a Location Store URL:
//
//	redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]
//	rediss://[[USER]:PASSWORD@]HOST[:PORT][/DB][?ca=FILE][&cert=FILE&key=FILE][&servername=NAME]
//
// The port defaults to 6379 and DB to 0; the other fields take their
// defaults. rediss:// connects over TLS (TLS 1.2 or later) and verifies the
// server certificate against the PEM CA bundle in ca, or against the
// system roots when ca is absent; cert and key (PEM, both or neither) are
// the client certificate for servers with tls-auth-clients; servername
// overrides the name verified in the server certificate (default HOST).
// The files are read here, so an unreadable file is an error now rather
// than at connect time. Any other query parameter, a query on redis://, a
// fragment or an opaque part is refused with ErrInvalid; there is no
// option to skip verification.
func ParseRedisURL(u string) (RedisConfig, error) {
	cfg := DefaultRedisConfig()
	pu, err := url.Parse(u)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // ue.URL may hold a password
		}
		return RedisConfig{}, invalidf("redis url: %v", err)
	}
	if pu.Scheme != "redis" && pu.Scheme != "rediss" {
		return RedisConfig{}, invalidf("redis url %q: scheme must be redis:// or rediss://", redactURL(pu))
	}
	if pu.Host == "" || pu.Hostname() == "" {
		return RedisConfig{}, invalidf("redis url %q: missing host", redactURL(pu))
	}
	if pu.Fragment != "" || pu.Opaque != "" || (pu.Scheme == "redis" && pu.RawQuery != "") {
		return RedisConfig{}, invalidf("redis url %q: unsupported query, fragment or opaque part", redactURL(pu))
	}
	port := pu.Port()
	if port == "" {
		port = "6379"
	} else if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return RedisConfig{}, invalidf("redis url %q: bad port", redactURL(pu))
	}
	cfg.Addr = net.JoinHostPort(pu.Hostname(), port)
	if pu.User != nil {
		cfg.Username = pu.User.Username()
		cfg.Password, _ = pu.User.Password()
	}
	if path := strings.TrimPrefix(pu.Path, "/"); path != "" {
		db, err := strconv.Atoi(path)
		if err != nil || db < 0 {
			return RedisConfig{}, invalidf("redis url %q: bad db %q", redactURL(pu), path)
		}
		cfg.DB = db
	}
	if pu.Scheme == "rediss" {
		q, err := url.ParseQuery(pu.RawQuery)
		if err != nil {
			return RedisConfig{}, invalidf("redis url %q: query: %v", redactURL(pu), err)
		}
		files, err := tlsFilesFromQuery(q)
		if err != nil {
			return RedisConfig{}, fmt.Errorf("redis url %q: %w", redactURL(pu), err)
		}
		if cfg.TLS, err = files.config(); err != nil {
			return RedisConfig{}, fmt.Errorf("redis url %q: %w", redactURL(pu), err)
		}
	}
	if err := cfg.validate(); err != nil {
		return RedisConfig{}, fmt.Errorf("redis url %q: %w", redactURL(pu), err)
	}
	return cfg, nil
}

// redactURL hides the password of a URL for error messages.
func redactURL(u *url.URL) string { return u.Redacted() }
