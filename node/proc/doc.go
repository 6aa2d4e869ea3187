// Package proc starts and supervises the processes that stand in for
// containers in `podgate run`.
//
// A container is a process group: the process podgate starts leads its own
// group (so a Ctrl-C at the terminal reaches podgate, which then stops the
// pods gracefully, and never the containers directly), and when the leader
// exits the rest of the group is killed, as a container's other processes
// die with its init. Output is read through pipes podgate owns, so a
// background process that keeps a pipe open cannot hold up the exit.
//
// A Spec may carry Enter, which the spawner calls around the fork on its
// own thread: a pod's network namespace, say. The child inherits the
// thread's namespace and stays tied to the thread by its parent-death
// signal; a thread that cannot come back stops the spawner
// (ErrSpawnerStopped) instead of forking containers in the wrong place.
//
// A Spec may carry a Security: the user, groups, capabilities,
// no_new_privs and read-only view of this machine's mounts the program
// runs with, as a container runtime applies a securityContext. They are
// applied by this binary re-executed between the fork and the program
// (see Security), on the same pid.
//
// Nothing survives podgate. Two guards, because either alone leaves a gap:
//
//   - Every leader gets PR_SET_PDEATHSIG=SIGKILL. The signal fires when the
//     *thread* that forked the child ends, not the process, so children are
//     forked from one goroutine locked to its OS thread for the
//     Supervisor's whole life.
//   - A parent-death signal reaches only the direct child; a shell's own
//     children would be left behind. A small guardian process (this same
//     binary, started in reaper mode through an environment variable,
//     which its main hands to RunReaperIfAsked) is told every live process
//     group over a pipe; when the pipe reaches EOF — podgate exited,
//     however it died — it SIGKILLs every group still registered and
//     exits.
package proc
