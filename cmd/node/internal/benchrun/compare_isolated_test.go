package benchrun

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// compareClientEnv makes the test binary the client process of a compare
// run (RunCompare with the options in the variable, as JSON).
const compareClientEnv = "ZLINK_BENCHRUN_COMPARE_CLIENT"

// TestCompareHelperClient is the client process of runCompareIsolated.
func TestCompareHelperClient(t *testing.T) {
	js := os.Getenv(compareClientEnv)
	if js == "" {
		t.Skip("the compare bench's client process (started by runCompareIsolated)")
	}
	var o CompareOptions
	if err := json.Unmarshal([]byte(js), &o); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(2)
	}
	o.launcher = testLauncher(t)
	if _, err := RunCompare(context.Background(), os.Stdout, o); err != nil {
		os.Stdout.WriteString("\ncompare error: " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Exit(0) // before the testing package's own race verdict: see runCompareIsolated
}

// runCompareIsolated runs RunCompare in a process of its own (this test
// binary again) and returns what it printed and the results it wrote.
//
// Why: protoactor-go's Remote.Start sets gRPC's package-level logger
// (grpclog.SetLoggerV2) each time a remote starts, and the transport
// goroutines of a remote that was shut down read that logger as they wind
// down; nothing orders the two in either library, so a second remote in
// one process is a data race the detector reports (every compare round
// dials a fresh remote). The client process runs with GORACE=exitcode=0:
// what the detector prints there goes to the test's log, and the process's
// result is RunCompare's. ZLink's own client code is held under -race by
// the rest of the suite.
func runCompareIsolated(t *testing.T, ctx context.Context, o CompareOptions) (string, *CompareResult) {
	t.Helper()
	if o.JSONPath == "" {
		o.JSONPath = filepath.Join(t.TempDir(), "r.json")
	}
	js, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestCompareHelperClient$")
	cmd.Env = append(os.Environ(), compareClientEnv+"="+string(js), "GORACE=exitcode=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	text := stdout.String()
	t.Log("\n" + text)
	if stderr.Len() > 0 {
		t.Logf("client process stderr:\n%s", stderr.String())
	}
	if runErr != nil {
		t.Fatalf("compare client process: %v", runErr)
	}
	res, err := ReadCompareJSON(o.JSONPath)
	if err != nil {
		t.Fatalf("compare results: %v", err)
	}
	return text, res
}
