package apachekafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACL allows one operation on one resource to a principal, from any host.
type ACL struct {
	Principal string // User:<name>
	// Resource is kmsg.ACLResourceTypeTopic, …TransactionalId, …Group or …Cluster.
	Resource kmsg.ACLResourceType
	Name     string                      // the resource's name ("kafka-cluster" for the cluster)
	Pattern  kmsg.ACLResourcePatternType // kmsg.ACLResourcePatternTypeLiteral or …Prefixed
	// Operation is e.g. kmsg.ACLOperationWrite, …Read, …Describe, …DescribeConfigs.
	Operation kmsg.ACLOperation
}

func (a ACL) String() string {
	return fmt.Sprintf("%s %s on %s %s (%s)", a.Principal, a.Operation, a.Resource, a.Name, a.Pattern)
}

// CreateACLs creates the ACLs (the cluster needs Authorizer) with the admin's super user.
func (c *Cluster) CreateACLs(ctx context.Context, acls ...ACL) error {
	req := kmsg.NewPtrCreateACLsRequest()
	for _, a := range acls {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = a.Resource, a.Name, a.Pattern
		cr.Principal, cr.Host = a.Principal, "*"
		cr.Operation, cr.PermissionType = a.Operation, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, cr)
	}
	resp, err := req.RequestWith(ctx, c.admin)
	if err != nil {
		return fmt.Errorf("create ACLs: %w", err)
	}
	for i, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			msg := ""
			if r.ErrorMessage != nil {
				msg = ": " + *r.ErrorMessage
			}
			return fmt.Errorf("create ACL %s: %w%s", acls[i], err, msg)
		}
	}
	return nil
}
