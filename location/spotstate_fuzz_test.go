package location

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseSpotState decodes arbitrary replies of the state read script,
// with data sizes at and around MaxSpotState: it never panics, accepts
// only a version in uint32, an epoch from 1 and data within the limit,
// and refuses every "big" reply (the script's word that the data was
// over the limit and not read). The seeds run in plain go test; run
// longer with
// go test -run '^$' -fuzz '^FuzzParseSpotState$' -fuzztime 60s ./location/
func FuzzParseSpotState(f *testing.F) {
	for _, s := range []struct {
		status, v, e string
		size         int
		nearLimit    bool
	}{
		{"ok", "1", "1", 0, false},
		{"ok", "4294967295", "999999999999999", 100, false},
		{"ok", "4294967296", "1", 1, false},
		{"ok", "1", "0", 1, false},
		{"ok", "1", "18446744073709551616", 1, false},
		{"ok", "", "", 0, false},
		{"big", "1", "7", 0, true},
		{"ok", "1", "7", 0, true}, // MaxSpotState - 1
		{"ok", "1", "7", 1, true}, // MaxSpotState
		{"ok", "1", "7", 2, true}, // MaxSpotState + 1 (a reply the script never sends)
		{"corrupt", "", "", 0, false},
	} {
		f.Add(s.status, s.v, s.e, s.size, s.nearLimit)
	}
	f.Fuzz(func(t *testing.T, status, v, e string, size int, nearLimit bool) {
		size = max(size, -size) % 1024
		if nearLimit {
			size = MaxSpotState - 1 + size%3
		}
		var reply []string
		switch status {
		case "ok":
			reply = []string{status, v, e, strings.Repeat("d", size)}
		case "big":
			reply = []string{status, v, e, strconv.Itoa(MaxSpotState + 1 + size)}
		default:
			reply = []string{status}
		}
		st, err := parseSpotState(reply)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("a multi-line error: %q", err)
			}
			return
		}
		if status != "ok" {
			t.Fatalf("reply %q accepted", status)
		}
		wantV, errV := strconv.ParseUint(v, 10, 32)
		wantE, errE := strconv.ParseUint(e, 10, 64)
		if len(st.Data) > MaxSpotState || len(st.Data) != size || st.Epoch == 0 || errV != nil || errE != nil ||
			uint64(st.Version) != wantV || st.Epoch != wantE {
			t.Fatalf("accepted %q %q (%d bytes) as version %d epoch %d (%d bytes)", v, e, size, st.Version, st.Epoch, len(st.Data))
		}
	})
}
