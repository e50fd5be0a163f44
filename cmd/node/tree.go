package main

import (
	"io"
	"strconv"
	"strings"

	"github.com/zlink-go/zlink/supervisor"
)

// formatTree writes the supervision tree one actor per line (the
// supervisor's format) and adds, beside the queued messages, the handlers
// an owner is running (`running=N`) and how many of them are hung.
func formatTree(w io.Writer, root supervisor.Node) error {
	lines := strings.Split(strings.TrimSuffix(root.String(), "\n"), "\n")
	var b strings.Builder
	i := 0
	var walk func(n supervisor.Node)
	walk = func(n supervisor.Node) {
		if i >= len(lines) {
			return
		}
		b.WriteString(lines[i])
		i++
		if r := n.Info["running"]; r != "" {
			b.WriteString(" running=" + r)
		}
		if n.Hung > 0 {
			b.WriteString(" hung=" + strconv.Itoa(n.Hung))
		}
		b.WriteByte('\n')
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(root)
	_, err := io.WriteString(w, b.String())
	return err
}
