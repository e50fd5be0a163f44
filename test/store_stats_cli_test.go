package test

// The Location Store's counters through zlink-node: a corrupt record in
// Redis is logged by the node (the store has its logger) and counted in
// `status` and /metrics.

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zlink-go/zlink/location/locationtest"
)

func TestCLI_StoreCorruptRecordsLoggedAndCounted(t *testing.T) {
	redis := locationtest.StartRedis(t)
	n := cliStartNode(t, "--mesh", "game", "--rid-prefix", "s", "--location", redis.URL(), "--server", "match")
	if r := cliRun(t, 10*time.Second, "status", "--admin", n.admin); r.code != 0 || !strings.Contains(r.stdout, "\nstore kind=redis corrupt_records=0 errors=0 ") {
		t.Fatalf("status before: exit %d\n%s", r.code, r.stdout)
	}
	// A broken writer's descriptor beside the node's: discovery lists the
	// mesh, skips it, counts it and logs it.
	redis.Command(t, "HSET", "zlink:{mesh:game}:node:broken", "gen", "1", "rev", "1", "d", "not msgpack")
	// Entered in the mesh's change log as a writer would: the revision
	// moves, the record is among the changes and lives a minute.
	redis.Command(t, "EVAL", `local s = redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('ZADD', KEYS[2], s, 'broken')
redis.call('ZADD', KEYS[3], ARGV[1], 'broken')
return s`, "3", "zlink:{mesh:game}:rev", "zlink:{mesh:game}:changed", "zlink:{mesh:game}:live",
		strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10))
	var line string
	cliWait(t, "status to count the corrupt record", 20*time.Second, func() bool {
		r := cliRun(t, 10*time.Second, "status", "--admin", n.admin)
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, "store ") {
				line = l
			}
		}
		c, _ := strconv.Atoi(cliFields(line)["corrupt_records"])
		return c > 0
	})
	cliWait(t, "the node to log the corrupt record", 10*time.Second, func() bool {
		return strings.Contains(n.stderr.String(), "location: corrupted record skipped") && strings.Contains(n.stderr.String(), "node:broken")
	})
	resp, err := http.Get("http://" + n.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "\nzlink_store_corrupt_records_total ") || strings.Contains(string(body), "\nzlink_store_corrupt_records_total 0\n") {
		t.Fatalf("/metrics lacks the corrupt records (status said %q)", line)
	}
}
