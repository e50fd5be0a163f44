package location

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// RedisConfig configures NewRedis. Zero fields take the defaults of
// DefaultRedisConfig.
type RedisConfig struct {
	// Addr is host:port of a standalone Redis or any Redis Cluster node.
	// Required.
	Addr string
	// DB is the database number (standalone only). Default 0.
	DB int
	// Username and Password authenticate with AUTH when set.
	Username string
	Password string
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
	return nil
}

// ParseRedisURL parses redis://[[user]:password@]HOST[:PORT][/DB]. The port
// defaults to 6379 and DB to 0; the other fields take their defaults.
func ParseRedisURL(u string) (RedisConfig, error) {
	cfg := DefaultRedisConfig()
	pu, err := url.Parse(u)
	if err != nil {
		return RedisConfig{}, invalidf("redis url: %v", err)
	}
	if pu.Scheme != "redis" {
		return RedisConfig{}, invalidf("redis url %q: scheme must be redis://", u)
	}
	if pu.Host == "" || pu.Hostname() == "" {
		return RedisConfig{}, invalidf("redis url %q: missing host", u)
	}
	if pu.RawQuery != "" || pu.Fragment != "" || pu.Opaque != "" {
		return RedisConfig{}, invalidf("redis url %q: unsupported query, fragment or opaque part", u)
	}
	port := pu.Port()
	if port == "" {
		port = "6379"
	} else if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return RedisConfig{}, invalidf("redis url %q: bad port", u)
	}
	cfg.Addr = net.JoinHostPort(pu.Hostname(), port)
	if pu.User != nil {
		cfg.Username = pu.User.Username()
		cfg.Password, _ = pu.User.Password()
	}
	if path := strings.TrimPrefix(pu.Path, "/"); path != "" {
		db, err := strconv.Atoi(path)
		if err != nil || db < 0 {
			return RedisConfig{}, invalidf("redis url %q: bad db %q", u, path)
		}
		cfg.DB = db
	}
	if err := cfg.validate(); err != nil {
		return RedisConfig{}, fmt.Errorf("redis url %q: %w", u, err)
	}
	return cfg, nil
}
