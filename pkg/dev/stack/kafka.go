package stack

import "github.com/twmb/franz-go/pkg/kfake"

func kafkaPortOpt(port int) []kfake.Opt {
	if port == 0 {
		return nil
	}
	return []kfake.Opt{kfake.Ports(port)}
}
