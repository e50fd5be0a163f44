package location_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location"
)

func TestParseRedisURL(t *testing.T) {
	good := []struct {
		in         string
		addr       string
		db         int
		user, pass string
	}{
		{"redis://127.0.0.1:6380", "127.0.0.1:6380", 0, "", ""},
		{"redis://redis.local:7000/3", "redis.local:7000", 3, "", ""},
		{"redis://redis.local", "redis.local:6379", 0, "", ""},
		{"redis://[::1]:6379/0", "[::1]:6379", 0, "", ""},
		{"redis://:secret@h:1/2", "h:1", 2, "", "secret"},
		{"redis://u:p@h:1", "h:1", 0, "u", "p"},
	}
	for _, tc := range good {
		cfg, err := location.ParseRedisURL(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if cfg.Addr != tc.addr || cfg.DB != tc.db || cfg.Username != tc.user || cfg.Password != tc.pass {
			t.Errorf("%s: %+v", tc.in, cfg)
		}
		if cfg.Prefix != "zlink" || cfg.PollInterval != time.Second {
			t.Errorf("%s: defaults not applied: %+v", tc.in, cfg)
		}
	}
	for _, in := range []string{
		"", "127.0.0.1:6379", "http://h:1", "rediss://h:1", "redis://", "redis://h:0",
		"redis://h:99999", "redis://h:1/x", "redis://h:1/-1", "redis://h:1?db=2", "redis://h:1/2/3",
	} {
		if _, err := location.ParseRedisURL(in); !errors.Is(err, location.ErrInvalid) {
			t.Errorf("%q: error %v, want ErrInvalid", in, err)
		}
	}
}
