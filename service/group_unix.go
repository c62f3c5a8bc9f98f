//go:build unix

package service

import (
	"os/exec"
	"syscall"
)

// groupsSupported reports whether the service can run in a process group of its
// own, which is how cbprobe stops it and everything it started.
const groupsSupported = true

// inOwnGroup makes cmd the leader of a new process group.
func inOwnGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends sig to every process of group pgid (0 only checks it exists).
func signalGroup(pgid int, sig syscall.Signal) error { return syscall.Kill(-pgid, sig) }

// signalPID sends sig to one process.
func signalPID(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
