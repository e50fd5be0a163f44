package main

import (
	"strings"
	"testing"
)

// Names are printed so they can neither break a line nor fake a field.
func TestLineValue(t *testing.T) {
	for in, want := range map[string]string{
		"game":              "game",
		"game-1.eu_west":    "game-1.eu_west",
		"a\nready mesh=x":   `"a\nready\x20mesh=x"`,
		"tab\there":         `"tab\there"`,
		"bell\a":            `"bell\a"`,
		"esc\x1b[31m":       `"esc\x1b[31m"`,
		"a b":               `"a\x20b"`,
		"a,b":               `"a,b"`,
		`q"uote`:            `"q\"uote"`,
		"nbsp\u00a0x":       `"nbsp\u00a0x"`,
		"bad\xffutf8":       `"bad\xffutf8"`,
		"日本":                "日本",
		"zero\x00width":     `"zero\x00width"`,
		"del\x7f":           `"del\x7f"`,
		"line\u2028break":   `"line\u2028break"`,
		"rtl\u202eoverride": `"rtl\u202eoverride"`,
	} {
		got := lineValue(in)
		if got != want {
			t.Errorf("lineValue(%q) = %s, want %s", in, got, want)
		}
		if strings.ContainsAny(got, " \n\r\t") {
			t.Errorf("lineValue(%q) = %q holds a space or a line break", in, got)
		}
	}
}
