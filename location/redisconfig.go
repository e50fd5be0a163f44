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
	// Required. NewRedis detects a Cluster by itself (CLUSTER SLOTS) and
	// then discovers every node from the one it reached.
	Addr string
	// Addrs are more nodes of the same Redis Cluster (host:port each),
	// tried at start when Addr does not answer. With Addrs set NewRedis
	// requires a Cluster. Default none.
	Addrs []string
	// DB is the database number (standalone only; a Cluster has only 0).
	// Default 0.
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
	// PollInterval is how often Watch reads the mesh revision to recover
	// lost pushes (see "Following a mesh"); each watch of a mesh also
	// sweeps expired leases every PollInterval × live descriptors on
	// average. Default 1s.
	PollInterval time.Duration
	// DialTimeout bounds connecting to Redis. Default 5s.
	DialTimeout time.Duration
	// OpTimeout bounds each operation whose ctx has no deadline, so no call
	// hangs while Redis is unreachable. Default 5s.
	OpTimeout time.Duration
	// ReplicaAcks says which Spot directory writes wait for a replica's
	// acknowledgement (WAIT 1 right after the write, on the same
	// connection) and fail with ErrUnconfirmed when none comes within
	// ReplicaTimeout. Default ReplicaAcksAuto.
	ReplicaAcks ReplicaAcks
	// ReplicaTimeout bounds each WAIT (further bounded by the call's
	// deadline). At most OpTimeout. Default 1s.
	ReplicaTimeout time.Duration
	// ReplicaRefresh is how often ReplicaAcksAuto re-reads which masters
	// have replicas (INFO replication; on a Cluster CLUSTER SLOTS too).
	// Default 5s.
	ReplicaRefresh time.Duration
	// Logger receives a warning the first time a corrupted record is
	// skipped or refused under a given key (later ones of that key at
	// debug level). Default: the zero Logger, which logs nothing.
	Logger zerolog.Logger
}

// ReplicaAcks selects the Spot directory writes that wait for a replica
// (RedisConfig.ReplicaAcks).
type ReplicaAcks uint8

const (
	// ReplicaAcksAuto (the zero value): writes to a master that has had a
	// connected replica wait for one. NewRedis reads INFO replication of
	// every master (the standalone server, or each Cluster master found by
	// CLUSTER SLOTS) and again every ReplicaRefresh. A master seen with a
	// replica keeps waiting for the life of the store, also once its
	// replicas are disconnected (that is when waiting matters), so its
	// writes fail with ErrUnconfirmed until a replica is back. A master
	// never seen with a replica, e.g. a standalone server without any,
	// pays nothing. If the check fails (an ACL without INFO), nothing is
	// learnt and a warning is logged: set Always or Never then.
	ReplicaAcksAuto ReplicaAcks = iota
	// ReplicaAcksAlways: every write waits, on every master. Without any
	// replica every write fails with ErrUnconfirmed.
	ReplicaAcksAlways
	// ReplicaAcksNever: no write waits (no replicas, or an accepted risk
	// of losing acknowledged writes in a failover).
	ReplicaAcksNever
)

func (a ReplicaAcks) String() string {
	switch a {
	case ReplicaAcksAuto:
		return "auto"
	case ReplicaAcksAlways:
		return "always"
	case ReplicaAcksNever:
		return "never"
	default:
		return fmt.Sprintf("ReplicaAcks(%d)", uint8(a))
	}
}

// DefaultRedisConfig returns the defaults (Addr is left empty).
func DefaultRedisConfig() RedisConfig {
	return RedisConfig{
		Prefix:       "zlink",
		PollInterval: DefaultPollInterval,
		DialTimeout:  5 * time.Second,
		OpTimeout:    5 * time.Second,

		ReplicaAcks:    ReplicaAcksAuto,
		ReplicaTimeout: time.Second,
		ReplicaRefresh: 5 * time.Second,
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
	if c.ReplicaTimeout == 0 {
		c.ReplicaTimeout = min(d.ReplicaTimeout, c.OpTimeout)
	}
	if c.ReplicaRefresh == 0 {
		c.ReplicaRefresh = d.ReplicaRefresh
	}
	return c
}

func (c RedisConfig) validate() error {
	for _, a := range append([]string{c.Addr}, c.Addrs...) {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return invalidf("redis addr %q: %v", a, err)
		}
	}
	if len(c.Addrs) > 0 && c.DB != 0 {
		return invalidf("redis db %d with several cluster addresses: a Cluster has only db 0", c.DB)
	}
	if c.DB < 0 {
		return invalidf("redis db %d", c.DB)
	}
	if strings.ContainsAny(c.Prefix, "{}") {
		return invalidf("redis key prefix %q contains a hash-tag brace", c.Prefix)
	}
	if c.PollInterval < 0 || c.DialTimeout < 0 || c.OpTimeout < 0 || c.ReplicaTimeout < 0 || c.ReplicaRefresh < 0 {
		return invalidf("negative redis timeout")
	}
	if c.ReplicaAcks > ReplicaAcksNever {
		return invalidf("redis replica acks %v", c.ReplicaAcks)
	}
	if c.ReplicaTimeout > c.OpTimeout || (c.ReplicaTimeout > 0 && c.ReplicaTimeout < time.Millisecond) {
		return invalidf("redis replica timeout %v outside 1ms..OpTimeout (%v)", c.ReplicaTimeout, c.OpTimeout)
	}
	if c.TLS != nil && c.TLS.InsecureSkipVerify && c.TLS.VerifyConnection == nil && c.TLS.VerifyPeerCertificate == nil {
		return invalidf("redis TLS: InsecureSkipVerify without a verification callback; give the server's CA instead")
	}
	return nil
}

// ParseRedisURL parses a Location Store URL:
//
//	redis://[[USER]:PASSWORD@]HOST[:PORT][/DB][?addr=HOST:PORT...]
//	rediss://[[USER]:PASSWORD@]HOST[:PORT][/DB][?ca=FILE][&cert=FILE&key=FILE][&servername=NAME][&addr=HOST:PORT...]
//
// The port defaults to 6379 and DB to 0; the other fields take their
// defaults. HOST may be a standalone server or any node of a Redis Cluster
// (detected when connecting). Each addr parameter (repeatable) names
// another node of the same Cluster, tried when HOST does not answer at
// start (RedisConfig.Addrs); with addr the URL must name a Cluster and DB
// must be 0. rediss:// connects over TLS (TLS 1.2 or later) and verifies the
// server certificate against the PEM CA bundle in ca, or against the
// system roots when ca is absent; cert and key (PEM, both or neither) are
// the client certificate for servers with tls-auth-clients; servername
// overrides the name verified in the server certificate (default HOST).
// The files are read here, so an unreadable file is an error now rather
// than at connect time. Any other query parameter, a TLS parameter on
// redis://, a fragment or an opaque part is refused with ErrInvalid; there
// is no option to skip verification.
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
	if pu.Fragment != "" || pu.Opaque != "" {
		return RedisConfig{}, invalidf("redis url %q: unsupported fragment or opaque part", redactURL(pu))
	}
	q, err := url.ParseQuery(pu.RawQuery)
	if err != nil {
		return RedisConfig{}, invalidf("redis url %q: query: %v", redactURL(pu), err)
	}
	cfg.Addrs = q[clusterParamAddr]
	delete(q, clusterParamAddr)
	if pu.Scheme == "redis" && len(q) > 0 {
		return RedisConfig{}, invalidf("redis url %q: unsupported query parameter (known: addr; TLS ones need rediss://)", redactURL(pu))
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

// clusterParamAddr is the query parameter naming another Cluster node.
const clusterParamAddr = "addr"

// redactURL hides the password of a URL for error messages.
func redactURL(u *url.URL) string { return u.Redacted() }
