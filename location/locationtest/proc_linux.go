package locationtest

import (
	"os/exec"
	"syscall"
)

// configureChild makes the kernel kill redis-server if the test binary dies.
func configureChild(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
