// The bridge from extComponents (the registration hook of cache_components.go and
// informer.go) to registry() in main.go.
package main

import "time"

// extComponentsAsRegistry turns the components registered in extComponents into
// registry entries.
func extComponentsAsRegistry() []component {
	var out []component
	for name, c := range extComponents {
		out = append(out, component{
			name:         name,
			minProtocol:  c.minProtocol,
			capabilities: c.caps,
			create: func(_ *env, options map[string]any) (instance, error) {
				x, err := c.create(options)
				if err != nil {
					return nil, err
				}
				return extBridge{x}, nil
			},
		})
	}
	return out
}

// extBridge: an extInstance advances after the example's clock has moved.
type extBridge struct{ extInstance }

func (b extBridge) beforeStep(now, target time.Time) func() error {
	return func() error { return b.advance(target.Sub(now)) }
}
