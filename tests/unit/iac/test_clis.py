"""The per-CLI verb tables: which argv changes real infrastructure, as the gate and the text
reader both read it."""

from __future__ import annotations

import shlex

import pytest

from iaccode.iac.clis import CLIS, GATED, classify


def label(line: str) -> str | None:
    name, *args = shlex.split(line)
    change = classify(name, args)
    return change.label if change is not None else None


CHANGES = [
    # Terraform, OpenTofu, Terragrunt
    ("terraform apply", "terraform apply"),
    ("terraform -chdir=envs/prod apply -auto-approve", "terraform apply"),
    ("terraform destroy -target=aws_s3_bucket.logs", "terraform destroy"),
    ("terraform refresh", "terraform refresh"),
    ("terraform test", "terraform test"),
    ("terraform init -migrate-state", "terraform init -migrate-state"),
    ("terraform init -force-copy", "terraform init -migrate-state"),
    ("terraform state rm aws_s3_bucket.logs", "terraform state rm"),
    ("terraform state replace-provider a b", "terraform state replace-provider"),
    ("terraform workspace delete staging", "terraform workspace delete"),
    ("terraform import a b", "terraform import"),
    ("tofu apply -auto-approve", "tofu apply"),
    ("terragrunt run --all apply", "terragrunt run apply"),
    ("terragrunt run-all destroy", "terragrunt run-all destroy"),
    ("terragrunt apply-all", "terragrunt apply-all"),
    ("terragrunt destroy-all --terragrunt-non-interactive", "terragrunt destroy-all"),
    ("terragrunt --working-dir live apply", "terragrunt apply"),
    ("terragrunt stack run apply", "terragrunt stack run apply"),
    ("terragrunt backend delete", "terragrunt backend delete"),
    # Pulumi
    ("pulumi up --yes", "pulumi up"),
    ("pulumi --color always up", "pulumi up"),
    ("pulumi -C infra -s prod destroy -y", "pulumi destroy"),
    ("pulumi refresh --yes", "pulumi refresh"),
    ("pulumi stack rm dev --yes", "pulumi stack rm"),
    ("pulumi state delete urn:x", "pulumi state delete"),
    ("pulumi import aws:s3/bucket:Bucket b b", "pulumi import"),
    ("pulumi cancel", "pulumi cancel"),
    ("pulumi watch", "pulumi watch"),
    # Kubernetes
    ("kubectl apply -f k8s/", "kubectl apply"),
    ("kubectl -v 9 delete pod web", "kubectl delete"),
    ("kubectl --namespace prod --context x delete ns old", "kubectl delete"),
    ("kubectl apply -f x.yaml --dry-run=false", "kubectl apply"),
    ("kubectl apply -f x.yaml --dry-run=none", "kubectl apply"),
    ("kubectl delete pod x -- --dry-run", "kubectl delete"),
    ("kubectl delete pod x -- --help", "kubectl delete"),
    ("kubectl exec web -- rm -rf /data", "kubectl exec"),
    ("kubectl cp ./x web:/tmp/x", "kubectl cp"),
    ("kubectl debug node/n -it --image=busybox", "kubectl debug"),
    ("kubectl rollout undo deploy/web", "kubectl rollout undo"),
    ("kubectl certificate approve csr-1", "kubectl certificate approve"),
    ("kubectl auth reconcile -f rbac.yaml", "kubectl auth reconcile"),
    ("kubectl drain node-1", "kubectl drain"),
    ("oc new-project demo", "oc new-project"),
    ("oc adm drain node-1", "oc adm"),
    ("helm upgrade --install web ./chart", "helm upgrade"),
    ("helm --burst-limit 100 uninstall web", "helm uninstall"),
    ("helm --kube-context prod -n x rollback web 2", "helm rollback"),
    ("helm install web ./c --dry-run=false", "helm install"),
    ("helm test web", "helm test"),
    ("helm push chart.tgz oci://r", "helm push"),
    ("helmfile apply", "helmfile apply"),
    ("helmfile -e prod sync", "helmfile sync"),
    ("helmfile destroy", "helmfile destroy"),
    # AWS
    ("aws cloudformation delete-stack --stack-name s", "aws cloudformation delete-stack"),
    ("aws --cli-binary-format raw-in-base64-out cloudformation delete-stack --stack-name s",
     "aws cloudformation delete-stack"),
    ("aws ec2 terminate-instances --instance-ids i-1", "aws ec2 terminate-instances"),
    ("aws --region eu-west-1 ec2 run-instances --image-id ami-1", "aws ec2 run-instances"),
    ("aws s3 rb s3://bucket --force", "aws s3 rb"),
    ("aws s3 rm s3://bucket/key", "aws s3 rm"),
    ("aws s3 cp ./x s3://bucket/x", "aws s3 cp"),
    ("aws s3 sync ./site s3://bucket", "aws s3 sync"),
    ("aws s3 mv s3://a/x ./x", "aws s3 mv"),
    ("aws s3api put-bucket-policy --bucket b --policy file://p.json",
     "aws s3api put-bucket-policy"),
    ("aws iam create-user --user-name u", "aws iam create-user"),
    ("aws lambda invoke --function-name f out.json", "aws lambda invoke"),
    ("aws ec2 run-instances --no-dry-run --image-id ami-1", "aws ec2 run-instances"),
    ("aws cloudformation package --template-file t.yaml --s3-bucket b",
     "aws cloudformation package"),
    # Alibaba Cloud
    ("aliyun ros CreateStack --StackName demo", "aliyun ros CreateStack"),
    ("aliyun ecs DeleteInstance --InstanceId i-1", "aliyun ecs DeleteInstance"),
    ("aliyun --profile prod ecs delete-instance --instance-id i-1",
     "aliyun ecs delete-instance"),
    ("aliyun cs DELETE /clusters/c1", "aliyun cs DELETE"),
    ("aliyun oss rm oss://bucket/x", "aliyun oss rm"),
    ("aliyun oss cp ./x oss://bucket/x", "aliyun oss cp"),
    ("aliyun rds ModifyDBInstanceSpec --DBInstanceId x", "aliyun rds ModifyDBInstanceSpec"),
    # Google Cloud, Azure
    ("gcloud compute instances delete vm-1 --zone z", "gcloud compute instances delete"),
    ("gcloud --project p run deploy web --image x", "gcloud run deploy"),
    ("gcloud projects add-iam-policy-binding p --member m --role r",
     "gcloud projects add-iam-policy-binding"),
    ("gcloud sql instances patch db --tier x", "gcloud sql instances patch"),
    ("gcloud storage rm gs://b/x", "gcloud storage rm"),
    ("gcloud storage cp ./x gs://b/x", "gcloud storage cp"),
    ("gcloud beta container clusters resize c --num-nodes 0",
     "gcloud beta container clusters resize"),
    ("gcloud compute ssh vm --command 'rm -rf /'", "gcloud compute ssh"),
    ("gsutil rm -r gs://bucket", "gsutil rm"),
    ("gsutil cp ./x gs://bucket/", "gsutil cp"),
    ("gsutil iam ch user:x:admin gs://b", "gsutil iam ch"),
    ("az group delete --name rg --yes", "az group delete"),
    ("az vm create -g rg -n vm --image x", "az vm create"),
    ("az deployment group create -g rg --template-file t.bicep",
     "az deployment group create"),
    ("az vm run-command invoke -g rg -n vm --command-id RunShellScript", "az vm run-command"),
    ("az --subscription s aks scale -g rg -n c --node-count 0", "az aks scale"),
    ("az role assignment create --assignee x --role Owner", "az role assignment create"),
    ("az rest --method put --url https://management.azure.com/x", "az rest"),
    # deployment tools
    ("cdk deploy --all --require-approval never", "cdk deploy"),
    ("cdk --app 'npx ts-node app.ts' destroy --force", "cdk destroy"),
    ("cdk bootstrap aws://1/eu-west-1", "cdk bootstrap"),
    ("cdktf deploy --auto-approve", "cdktf deploy"),
    ("cdktf destroy", "cdktf destroy"),
    ("ansible-playbook -i inventory site.yml", "ansible-playbook site.yml"),
    ("ansible-playbook site.yml --diff", "ansible-playbook site.yml"),
    ("ansible all -i hosts -m shell -a 'reboot'", "ansible all"),
    ("sam deploy --no-confirm-changeset", "sam deploy"),
    ("sam delete --no-prompts", "sam delete"),
    ("sam remote invoke Fn", "sam remote invoke"),
    ("serverless deploy --stage prod", "serverless deploy"),
    ("sls remove", "sls remove"),
    ("eksctl delete cluster --name c", "eksctl delete"),
    ("eksctl create nodegroup --cluster c", "eksctl create"),
    ("eksctl utils update-cluster-logging --cluster c", "eksctl utils update-cluster-logging"),
    ("argocd app sync web", "argocd app sync"),
    ("argocd app delete web --cascade", "argocd app delete"),
    ("argocd cluster rm https://k", "argocd cluster rm"),
    ("flux reconcile kustomization apps", "flux reconcile"),
    ("flux suspend helmrelease web", "flux suspend"),
    ("flux bootstrap github --owner x", "flux bootstrap"),
    ("nomad job run web.nomad", "nomad run"),
    ("nomad job stop web", "nomad stop"),
    ("nomad node drain -enable n1", "nomad drain"),
    ("doctl compute droplet delete web", "doctl compute droplet delete"),
    ("hcloud server delete web", "hcloud server delete"),
    ("vault kv put secret/app password=x", "vault put"),
    ("vault secrets disable kv", "vault disable"),
    ("packer build image.pkr.hcl", "packer build"),
    ("skaffold deploy", "skaffold deploy"),
]

READS = [
    "terraform plan -out=tfplan", "terraform -chdir=x plan", "terraform validate -json",
    "terraform fmt -check -diff", "terraform show -json tfplan", "terraform init -backend=false",
    "terraform state list", "terraform state show a.b", "terraform output -json",
    "terraform workspace select staging", "terraform providers lock", "terraform version",
    "terraform apply -help", "terraform -help", "terraform", "tofu plan",
    "terragrunt plan", "terragrunt run --all plan", "terragrunt hclfmt", "terragrunt render",
    "pulumi preview", "pulumi stack ls", "pulumi stack output", "pulumi config set x y",
    "pulumi destroy --preview-only", "pulumi refresh --preview-only", "pulumi whoami",
    "kubectl get pods -A", "kubectl -n prod describe deploy web", "kubectl diff -f k8s/",
    "kubectl apply -f k8s/ --dry-run=client", "kubectl apply -f x --dry-run=server",
    "kubectl apply -f x --dry-run", "kubectl create deploy web --image=x --dry-run=client -o yaml",
    "kubectl rollout status deploy/web", "kubectl logs web-1 -f", "kubectl config use-context x",
    "kubectl auth can-i delete pods", "kubectl version --client", "kubectl explain pods",
    "kubectl port-forward svc/web 8080:80", "kubectl top nodes", "kubectl help delete",
    "kubectl delete --help", "kubectl wait --for=condition=ready pod/x",
    "oc get pods", "oc status", "oc whoami",
    "helm template web ./chart", "helm lint ./chart", "helm list -A", "helm status web",
    "helm install web ./chart --dry-run", "helm upgrade web ./c --dry-run=server",
    "helm diff upgrade web ./chart", "helm repo add x https://x", "helm dependency update",
    "helm show values x/y", "helm get values web",
    "helmfile diff", "helmfile template", "helmfile lint",
    "aws sts get-caller-identity", "aws s3 ls", "aws s3 ls s3://bucket",
    "aws s3 cp s3://bucket/x ./x", "aws s3 sync s3://bucket ./local", "aws s3 presign s3://b/x",
    "aws ec2 describe-instances", "aws --region x ec2 describe-vpcs --output json",
    "aws cloudformation describe-stacks", "aws cloudformation validate-template --template-body x",
    "aws ec2 run-instances --dry-run --image-id ami-1", "aws configure list",
    "aws eks update-kubeconfig --name c", "aws ecr get-login-password", "aws logs tail /x",
    "aws dynamodb query --table-name t", "aws ec2 wait instance-running",
    "aws ec2 terminate-instances help", "aws ec2 run-instances --generate-cli-skeleton",
    "aws iam list-users", "aws", "aws help",
    "aliyun ecs DescribeInstances", "aliyun ros ListStacks", "aliyun ros GetStack --StackId x",
    "aliyun ros PreviewStack --StackName s", "aliyun ros ValidateTemplate",
    "aliyun cs GET /clusters", "aliyun oss ls oss://b", "aliyun oss cp oss://b/x ./x",
    "aliyun configure list", "aliyun ecs DeleteInstance --InstanceId i --dryrun",
    "aliyun ecs RunInstances --DryRun true",
    "gcloud compute instances list", "gcloud config set project p", "gcloud auth login",
    "gcloud projects get-iam-policy p", "gcloud container clusters describe c",
    "gcloud storage cp gs://b/x ./x", "gcloud info", "gcloud logging read x",
    "gsutil ls gs://b", "gsutil cp gs://b/x .", "gsutil cat gs://b/x", "gsutil iam get gs://b",
    "az vm list", "az group show -n rg", "az account show", "az login",
    "az deployment group what-if -g rg --template-file t", "az aks get-credentials -g rg -n c",
    "az rest --url https://x", "az rest --method get --url https://x",
    "cdk synth", "cdk diff", "cdk ls", "cdk doctor", "cdktf synth", "cdktf diff", "cdktf plan",
    "ansible-playbook site.yml --check", "ansible-playbook -C site.yml",
    "ansible-playbook site.yml --syntax-check", "ansible-playbook site.yml --list-tasks",
    "ansible all -m ping", "ansible all -m ansible.builtin.setup", "ansible-playbook --version",
    "sam build", "sam validate", "sam local invoke Fn", "sam logs -n Fn",
    "serverless info", "sls print", "sls invoke local -f x", "sls package",
    "eksctl get clusters", "eksctl create cluster --dry-run", "eksctl utils describe-stacks",
    "argocd app get web", "argocd app diff web", "argocd app list", "argocd app sync web --dry-run",
    "argocd login x", "flux get all", "flux check", "flux create source git x --export",
    "flux logs", "nomad job status web", "nomad job plan web.nomad", "nomad node status",
    "doctl compute droplet list", "hcloud server list", "vault kv get secret/x",
    "vault status", "packer validate x", "packer fmt .", "skaffold render",
]


@pytest.mark.parametrize(("line", "change"), CHANGES, ids=[c for c, _ in CHANGES])
def test_changes(line: str, change: str) -> None:
    assert label(line) == change


@pytest.mark.parametrize("line", READS)
def test_reads(line: str) -> None:
    assert label(line) is None


def test_every_cli_has_changes_and_reads_in_the_tests() -> None:
    names = {shlex.split(line)[0] for line, _ in CHANGES}
    assert names >= GATED - {"tofu", "ansible-pull", "oc"}
    assert {"terraform", "tofu", "terragrunt", "pulumi", "kubectl", "oc", "helm", "helmfile",
            "aws", "aliyun", "gcloud", "az", "cdk", "cdktf", "ansible-playbook", "sam",
            "serverless", "sls", "eksctl", "argocd", "flux", "nomad"} <= set(CLIS)


@pytest.mark.parametrize(("line", "unknown"), [
    ("kubectl frobnicate x", True),  # a plugin: it cannot tell
    ("helm secrets enc values.yaml", True),
    ("gcloud foo bar", True),
    ("aws newservice", True),
    ("terraform frobnicate", False),  # terraform prints its help: a read
])
def test_words_a_table_does_not_know(line: str, unknown: bool) -> None:
    name, *args = shlex.split(line)
    change = classify(name, args)
    assert (change is not None and change.unknown) is unknown
    if not unknown:
        assert change is None
