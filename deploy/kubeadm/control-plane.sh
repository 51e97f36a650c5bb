#!/usr/bin/env bash
# kubeadm path, step 1 (as root on the control-plane host): kubeadm init with kubeadm-config.yaml, the
# admin kubeconfig, Calico and the local-path storage class, all at the versions of deploy/versions.env.
# Prints the join command for deploy/kubeadm/worker.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$here/../lib.sh"
# shellcheck source=../versions.env
. "$here/../versions.env"
require_tools kubeadm kubelet kubectl containerd

kubeadm init --config "$here/kubeadm-config.yaml"
export KUBECONFIG=/etc/kubernetes/admin.conf
log "Calico $CALICO_VERSION"
kubectl apply -f "https://raw.githubusercontent.com/projectcalico/calico/$CALICO_VERSION/manifests/calico.yaml"
kubectl -n kube-system rollout status daemonset/calico-node --timeout=600s
log "local-path storage class ($LOCAL_PATH_PROVISIONER_VERSION), the default class"
kubectl apply -f "https://raw.githubusercontent.com/rancher/local-path-provisioner/$LOCAL_PATH_PROVISIONER_VERSION/deploy/local-path-storage.yaml"
kubectl annotate storageclass local-path storageclass.kubernetes.io/is-default-class=true --overwrite
log "on each worker, as root: deploy/kubeadm/worker.sh $(kubeadm token create --print-join-command | cut -d' ' -f3-)"
log "then here: deploy/kubeadm/zones.sh WORKER1=zone-a WORKER2=zone-a WORKER3=zone-b WORKER4=zone-b"
