//go:build !unix

package service

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// groupsSupported is false here: without Unix process groups (and /bin/sh)
// cbprobe cannot start a service and stop everything it started; Start refuses.
const groupsSupported = false

// inOwnGroup does nothing where there are no process groups.
func inOwnGroup(*exec.Cmd) {}

// signalGroup cannot signal a group here.
func signalGroup(int, syscall.Signal) error {
	return errors.New("process groups are not supported on this system")
}

// signalPID kills one process (the only signal there is here).
func signalPID(pid int, _ syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
