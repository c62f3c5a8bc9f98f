package service

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"
)

// tcpListen is the state number of a listening socket in /proc/net/tcp.
const tcpListen = 0x0A

// groupAlive reports whether a live process is left in the process group pgid.
// Zombies (dead, waiting for their parent to reap them) do not count: they
// hold no port and run nothing, and an init that does not reap orphans would
// otherwise keep the group "alive" for ever.
func groupAlive(pgid int) bool {
	err := signalGroup(pgid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	members, ok := liveMembers(pgid)
	return !ok || members > 0
}

// liveMembers counts the processes of group pgid that are not zombies; ok is
// false when /proc cannot be read.
func liveMembers(pgid int) (n int, ok bool) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, false
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return 0, false
	}
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil || st.PGRP != pgid {
			continue
		}
		if st.State != "Z" && st.State != "X" {
			n++
		}
	}
	return n, true
}

// groupMembers lists the processes of the process group pgid, as "PID (comm)".
// It reads /proc; nil when that is not possible.
func groupMembers(pgid int) []string {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return nil
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil || st.PGRP != pgid {
			continue
		}
		out = append(out, fmt.Sprintf("%d (%s, %s)", p.PID, st.Comm, st.State))
	}
	return out
}

// listeners maps a listening TCP port to the processes that hold it.
type listeners map[int][]int

// ports returns the listening ports, sorted.
func (l listeners) ports() []int {
	out := make([]int, 0, len(l))
	for p := range l {
		out = append(out, p)
	}
	sort.Ints(out)
	return out
}

// listeningPorts returns the TCP ports that processes chosen by keep listen on
// (IPv4 and IPv6), read from /proc. keep gets each process's stat.
func listeningPorts(keep func(procfs.ProcStat) bool) (listeners, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return nil, err
	}
	byInode := map[uint64]int{} // listening socket inode -> port
	//lint:ignore SA1019 /proc/net/tcp is read once per launch; netlink would add a dependency for no gain here.
	for _, read := range []func() (procfs.NetTCP, error){fs.NetTCP, fs.NetTCP6} {
		lines, err := read()
		if err != nil {
			continue // no IPv6, say
		}
		for _, l := range lines {
			if l.St == tcpListen {
				byInode[l.Inode] = int(l.LocalPort)
			}
		}
	}
	if len(byInode) == 0 {
		return listeners{}, nil
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return nil, err
	}
	out := listeners{}
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil || !keep(st) {
			continue
		}
		targets, err := p.FileDescriptorTargets()
		if err != nil {
			continue
		}
		for _, t := range targets {
			inode, ok := socketInode(t)
			if !ok {
				continue
			}
			if port, ok := byInode[inode]; ok {
				out[port] = appendUnique(out[port], p.PID)
			}
		}
	}
	return out, nil
}

// socketInode parses a /proc/PID/fd target "socket:[12345]".
func socketInode(target string) (uint64, bool) {
	s, ok := strings.CutPrefix(target, "socket:[")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64)
	return n, err == nil
}

func appendUnique(s []int, v int) []int {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// commandLine returns the command line of pid for messages ("" when unknown).
func commandLine(pid int) string {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return ""
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return ""
	}
	args, err := p.CmdLine()
	if err != nil {
		return ""
	}
	s := strings.Join(args, " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
