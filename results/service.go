package results

// Service is what cbprobe did to run the user's service for one arm
// (`--service COMMAND`): the command, where its output went, the properties it
// was given and cbprobe's overhead (start, health wait, stop) in seconds.
type Service struct {
	// Command is the shell command as given (run with /bin/sh -c).
	Command string `json:"command"`
	// Dir is the working directory of the command ("" for cbprobe's own).
	Dir string `json:"dir,omitempty"`
	// Log is the file holding the service's stdout and stderr, relative to the
	// run directory when it lies inside it.
	Log string `json:"log,omitempty"`
	// URL is the base URL the service was told to listen on (http://127.0.0.1:PORT).
	URL string `json:"url,omitempty"`
	// PID is the process id of the command's shell, also its process group id.
	PID int `json:"pid,omitempty"`
	// Properties are the Spring properties given in SPRING_APPLICATION_JSON
	// (dotted keys, as in application.properties).
	Properties map[string]string `json:"properties,omitempty"`
	// StartSeconds is the time from launching the command until its health
	// endpoint said UP (or until the start failed).
	StartSeconds float64 `json:"startSeconds"`
	// HealthWaitSeconds is the part of StartSeconds after the service first
	// answered HTTP on its port (0 when it never answered).
	HealthWaitSeconds float64 `json:"healthWaitSeconds"`
	// StopSeconds is the time from SIGTERM until no process of the group was
	// left (0 when the service had already gone).
	StopSeconds float64 `json:"stopSeconds"`
	// Killed is true when the group outlived the stop grace period and got SIGKILL.
	Killed bool `json:"killed,omitempty"`
	// Exit is how the command's shell ended, e.g. "exit status 143" or "killed by SIGKILL".
	Exit string `json:"exit,omitempty"`
	// Error is the fault that ended the service early ("" when it ran as planned).
	Error string `json:"error,omitempty"`
	// Notes are remarks about the process, e.g. a process that had left the
	// group and was found still listening on the service's port.
	Notes []string `json:"notes,omitempty"`
}
