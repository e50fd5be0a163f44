package main

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	zlink "github.com/zlink-go/zlink"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // a runtime failure: a request failed, a drain timed out
	exitConfig  = 2 // bad flags or a bad configuration
)

var (
	// errUsage marks bad flags and bad configuration found by the CLI
	// itself (the runtime's refusals match zlink.ErrConfig).
	errUsage = errors.New("zlink: usage")
	// errSilent ends the process with a failure status and no further
	// message: the command already printed its result lines.
	errSilent = errors.New("zlink: failed")
)

// usageError is a CLI-level configuration problem, reported with exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == errUsage }

func usagef(msg string) error { return &usageError{msg: msg} }

// exitCode maps an error returned by a command to the process status.
func exitCode(err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errUsage), errors.Is(err, zlink.ErrConfig):
		return exitConfig
	default:
		return exitFailure
	}
}

// oneLine keeps an error message on one line of stderr, in the command
// line's words (cliText), with control characters escaped (\x1b): a
// name in a message cannot drive the terminal.
func oneLine(s string) string {
	return escapeControls(strings.Join(strings.Fields(cliText(s)), " "))
}

// escapeControls writes each control character of s as \xHH (or \uHHHH).
func escapeControls(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !unicode.IsControl(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// apiWords maps names of the Go API and internal transport schemes that
// runtime messages use to what a command-line user writes instead.
var apiWords = strings.NewReplacer(
	"zgtcp://", "tcp://",
	"SetRoutingIDPrefix", "--rid-prefix",
	"SetRoutingID", "--rid",
	"SetLocationStore", "--location",
	"SetObjectRole", "--object",
	"AddPeer", "--peer",
	"a Location Store configured explicitly", "--location redis://HOST:PORT",
)

// cliText rewrites a runtime message for the command line: no internal
// scheme names, no Go API names.
func cliText(s string) string { return apiWords.Replace(s) }
