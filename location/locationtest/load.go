package locationtest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Load is what a redis-server has served since it started, as INFO
// reports it: commands by name (a command run inside a Lua script counts
// like one sent by a client; EVALSHA counts once more for the script) and
// the bytes it read from and wrote to its clients.
type Load struct {
	At       time.Time
	Calls    map[string]uint64 // command name → calls
	NetIn    uint64            // total_net_input_bytes
	NetOut   uint64            // total_net_output_bytes
	CPUMicro uint64            // used_cpu_sys + used_cpu_user, in µs
}

// Commands returns the calls of every command.
func (l Load) Commands() uint64 {
	var n uint64
	for _, c := range l.Calls {
		n += c
	}
	return n
}

// Sub returns what the server served between earlier and l.
func (l Load) Sub(earlier Load) Load {
	out := Load{At: l.At, Calls: map[string]uint64{}, NetIn: l.NetIn - earlier.NetIn, NetOut: l.NetOut - earlier.NetOut,
		CPUMicro: l.CPUMicro - earlier.CPUMicro}
	for k, c := range l.Calls {
		if d := c - earlier.Calls[k]; d > 0 {
			out.Calls[k] = d
		}
	}
	return out
}

// ReadLoad reads the load of the plain (non-TLS) redis-server at addr
// with one INFO all (which counts itself).
func ReadLoad(addr string) (Load, error) {
	info, err := command(addr, nil, "INFO", "all")
	if err != nil {
		return Load{}, err
	}
	l := Load{At: time.Now(), Calls: map[string]uint64{}}
	var cpu float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(k, "cmdstat_"):
			calls, _, _ := strings.Cut(v, ",")
			n, err := strconv.ParseUint(strings.TrimPrefix(calls, "calls="), 10, 64)
			if err != nil {
				return Load{}, fmt.Errorf("locationtest: INFO %s: %q", k, v)
			}
			l.Calls[strings.TrimPrefix(k, "cmdstat_")] = n
		case k == "total_net_input_bytes":
			l.NetIn, _ = strconv.ParseUint(v, 10, 64)
		case k == "total_net_output_bytes":
			l.NetOut, _ = strconv.ParseUint(v, 10, 64)
		case k == "used_cpu_sys" || k == "used_cpu_user":
			f, _ := strconv.ParseFloat(v, 64)
			cpu += f
		}
	}
	l.CPUMicro = uint64(cpu * 1e6)
	return l, nil
}

// Load reads the server's load (ReadLoad); it fails the test on an error.
// Only for a plain server.
func (s *RedisServer) Load(t testing.TB) Load {
	t.Helper()
	l, err := ReadLoad(s.Addr())
	if err != nil {
		t.Fatalf("locationtest: load of %s: %v", s.Addr(), err)
	}
	return l
}
