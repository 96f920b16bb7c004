module github.com/refimpl/conformance/adapters/client-go

go 1.26.0

require (
	k8s.io/client-go v0.36.3
	k8s.io/utils v0.0.0-20260210185600-b8788abfbbc2
)
