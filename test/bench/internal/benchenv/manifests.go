package benchenv

// TwoContainers is the seed's two-container service with kubelet probes
// tight enough to see a 2 s flip: a failed readiness check takes the
// container out at once (failureThreshold 1), every second. test/bench/doorbench
// runs it under podgate run, test/bench/clusterdoor on a cluster too.
const TwoContainers = `apiVersion: serving.knative.dev/v1
kind: Service
metadata:
  name: bench
spec:
  template:
    spec:
      terminationGracePeriodSeconds: 4
      containers:
        - name: app
          image: ghcr.io/podgate/testapp
          ports:
            - containerPort: 8080
          readinessProbe:
            httpGet: {path: /readyz}
            periodSeconds: 1
            failureThreshold: 1
        - name: sidecar
          image: ghcr.io/podgate/testapp
          args: ["--port", "8090"]
          readinessProbe:
            httpGet: {path: /readyz, port: 8090}
            periodSeconds: 1
            failureThreshold: 1
`
