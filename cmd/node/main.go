package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

func main() { os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr)) }

// execute runs the command line and returns the process exit status: 0 on
// success, 2 for bad flags or configuration (one line on stderr), 1 for any
// other failure.
func execute(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	if strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "unknown flag") {
		err = usagef(err.Error())
	}
	if err != errSilent {
		fmt.Fprintln(stderr, "zlink-node: "+oneLine(err.Error()))
	}
	return exitCode(err)
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "zlink-node",
		Short:         "Run and operate ZLink MeshNodes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usagef(err.Error()) })
	root.AddCommand(
		newRunCmd(),
		newStatusCmd(),
		newTreeCmd(),
		newWeightCmd(),
		newDrainCmd(),
		newUndrainCmd(),
		newRequestCmd(),
		newSpotCmd(),
		newSpotMoveCmd(),
		newSpotOwnerCmd(),
		newSpotRemindersCmd(),
		newRelocateCmd(),
		newDemoCmd(),
		newBenchCmd(),
	)
	for _, c := range root.Commands() {
		c.SilenceUsage = true
		c.SilenceErrors = true
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usagef(err.Error()) })
		if c.Args == nil {
			c.Args = cobra.NoArgs
		}
		args := c.Args
		c.Args = func(cmd *cobra.Command, a []string) error {
			if err := args(cmd, a); err != nil {
				return usagef(err.Error())
			}
			return nil
		}
	}
	return root
}
