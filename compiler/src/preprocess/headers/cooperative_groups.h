/* cdpc's cooperative_groups.h: the namespace is not declared here; cdpc's built-ins are what
 * device code may use. The header exists so that the #include of real programs succeeds. */
#ifndef __CDPC_COOPERATIVE_GROUPS_H__
#define __CDPC_COOPERATIVE_GROUPS_H__
#endif
