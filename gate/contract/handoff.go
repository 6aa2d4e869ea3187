package contract

// EnvHandoffURL is where the gate hands the requests it holds while its pod
// is not ready, once the pod has left its endpoints (Knative's activator).
const EnvHandoffURL = "PODGATE_HANDOFF_URL"
