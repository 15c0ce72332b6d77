(** * Shared definitions: vectors, finite sums, attention heads.

    The model of SPEC §1.1-1.4, written so that each definition reads like the
    formula it stands for.  A vector of dimension [d] is a function [nat -> R]
    read at [0 .. d-1]; a matrix is [nat -> nat -> R]; a sequence of tokens is a
    [list vec] whose last element is the query; a multi-head model is a
    [list (mat * vec)] of heads (W_h, v_h).

    Nothing here is assumed: every lemma is proved from Coq's real numbers. *)

From Coq Require Import Reals Lra Lia List Permutation.
Import ListNotations.
Open Scope R_scope.

(** ** Finite sums *)

(** [sumn n f] is f 0 + ... + f (n-1). *)
Fixpoint sumn (n : nat) (f : nat -> R) : R :=
  match n with
  | O => 0
  | S m => sumn m f + f m
  end.

Lemma sumn_ext : forall n f g, (forall i, (i < n)%nat -> f i = g i) -> sumn n f = sumn n g.
Proof.
  induction n as [|n IH]; intros f g H; simpl; [reflexivity|].
  rewrite (IH f g) by (intros; apply H; lia); rewrite (H n) by lia; reflexivity.
Qed.

Lemma sumn_zero : forall n f, (forall i, (i < n)%nat -> f i = 0) -> sumn n f = 0.
Proof.
  induction n as [|n IH]; intros f H; simpl; [reflexivity|].
  rewrite IH by (intros; apply H; lia); rewrite H by lia; ring.
Qed.

Lemma sumn_plus : forall n f g, sumn n (fun i => f i + g i) = sumn n f + sumn n g.
Proof. induction n as [|n IH]; intros; simpl; [ring|rewrite IH; ring]. Qed.

Lemma sumn_opp : forall n f, sumn n (fun i => - f i) = - sumn n f.
Proof. induction n as [|n IH]; intros; simpl; [ring|rewrite IH; ring]. Qed.

Lemma sumn_scal_l : forall n c f, sumn n (fun i => c * f i) = c * sumn n f.
Proof. induction n as [|n IH]; intros; simpl; [ring|rewrite IH; ring]. Qed.

Lemma sumn_swap : forall n m (f : nat -> nat -> R),
  sumn n (fun i => sumn m (fun j => f i j)) = sumn m (fun j => sumn n (fun i => f i j)).
Proof.
  induction n as [|n IH]; intros m f; simpl.
  - symmetry; apply sumn_zero; reflexivity.
  - rewrite IH, <- sumn_plus; reflexivity.
Qed.

(** Kronecker delta: picking one term out of a sum. *)
Definition kron (i j : nat) : R := if Nat.eqb i j then 1 else 0.

Lemma sumn_kron_r : forall n i f, (i < n)%nat -> sumn n (fun j => f j * kron j i) = f i.
Proof.
  induction n as [|n IH]; intros i f Hi; [lia|]; simpl.
  unfold kron at 2; destruct (Nat.eqb n i) eqn:E.
  - apply Nat.eqb_eq in E; subst.
    rewrite sumn_zero; [ring|].
    intros j Hj; unfold kron; destruct (Nat.eqb j i) eqn:F; [apply Nat.eqb_eq in F; lia|ring].
  - apply Nat.eqb_neq in E; rewrite IH by lia; ring.
Qed.

(** ** Vectors *)

Definition vec := nat -> R.
Definition mat := nat -> nat -> R.

Definition vzero : vec := fun _ => 0.
Definition vadd (x y : vec) : vec := fun i => x i + y i.
Definition vsub (x y : vec) : vec := fun i => x i - y i.
Definition vopp (x : vec) : vec := fun i => - x i.
(** The standard basis vector e_k. *)
Definition e (k : nat) : vec := fun i => kron i k.

(** xᵀy in dimension d. *)
Definition dot (d : nat) (x y : vec) : R := sumn d (fun i => x i * y i).

(** xᵀ W y in dimension d. *)
Definition bil (d : nat) (x : vec) (W : mat) (y : vec) : R :=
  sumn d (fun i => sumn d (fun j => x i * W i j * y j)).

Lemma dot_add_r : forall d x y z, dot d x (vadd y z) = dot d x y + dot d x z.
Proof. intros; unfold dot, vadd; rewrite <- sumn_plus; apply sumn_ext; intros; ring. Qed.

Lemma dot_sub_r : forall d x y z, dot d x (vsub y z) = dot d x y - dot d x z.
Proof.
  intros; unfold dot, vsub, Rminus; rewrite <- sumn_opp, <- sumn_plus; apply sumn_ext; intros; ring.
Qed.

Lemma dot_add_l : forall d x y z, dot d (vadd x y) z = dot d x z + dot d y z.
Proof. intros; unfold dot, vadd; rewrite <- sumn_plus; apply sumn_ext; intros; ring. Qed.

Lemma dot_opp_r : forall d x y, dot d x (vopp y) = - dot d x y.
Proof. intros; unfold dot, vopp; rewrite <- sumn_opp; apply sumn_ext; intros; ring. Qed.

Lemma dot_e_r : forall d x k, (k < d)%nat -> dot d x (e k) = x k.
Proof. intros; unfold dot, e; apply sumn_kron_r; assumption. Qed.

Lemma bil_add_l : forall d x y W q, bil d (vadd x y) W q = bil d x W q + bil d y W q.
Proof.
  intros; unfold bil, vadd; rewrite <- sumn_plus; apply sumn_ext; intros.
  rewrite <- sumn_plus; apply sumn_ext; intros; ring.
Qed.

Lemma bil_sub_l : forall d x y W q, bil d (vsub x y) W q = bil d x W q - bil d y W q.
Proof.
  intros; unfold bil, vsub, Rminus; rewrite <- sumn_opp, <- sumn_plus; apply sumn_ext; intros.
  rewrite <- sumn_opp, <- sumn_plus; apply sumn_ext; intros; ring.
Qed.

Lemma bil_opp_opp : forall d x W q, bil d (vopp x) W (vopp q) = bil d x W q.
Proof. intros; unfold bil, vopp; apply sumn_ext; intros; apply sumn_ext; intros; ring. Qed.

Lemma bil_e_e : forall d W k j, (k < d)%nat -> (j < d)%nat -> bil d (e k) W (e j) = W k j.
Proof.
  intros d W k j Hk Hj; unfold bil.
  rewrite (sumn_ext d _ (fun i => (W i j) * kron i k)).
  - exact (sumn_kron_r d k (fun i => W i j) Hk).
  - intros i Hi; unfold e; rewrite (sumn_kron_r d j (fun l => kron i k * W i l)) by assumption; ring.
Qed.

(** ** Sums over lists *)

Fixpoint lsum (l : list R) : R :=
  match l with
  | [] => 0
  | a :: t => a + lsum t
  end.

Lemma lsum_app : forall l l', lsum (l ++ l') = lsum l + lsum l'.
Proof. induction l as [|a l IH]; intros; simpl; [ring|rewrite IH; ring]. Qed.

Lemma lsum_map_plus : forall {A} (f g : A -> R) l,
  lsum (map (fun x => f x + g x) l) = lsum (map f l) + lsum (map g l).
Proof. induction l as [|a l IH]; simpl; [ring|rewrite IH; ring]. Qed.

Lemma lsum_map_opp : forall {A} (f : A -> R) l, lsum (map (fun x => - f x) l) = - lsum (map f l).
Proof. induction l as [|a l IH]; simpl; [ring|rewrite IH; ring]. Qed.

Lemma lsum_map_scal : forall {A} c (f : A -> R) l, lsum (map (fun x => c * f x) l) = c * lsum (map f l).
Proof. induction l as [|a l IH]; simpl; [ring|rewrite IH; ring]. Qed.

Lemma lsum_map_ext : forall {A} (f g : A -> R) l,
  (forall x, In x l -> f x = g x) -> lsum (map f l) = lsum (map g l).
Proof.
  induction l as [|a l IH]; intros H; simpl; [reflexivity|].
  rewrite H by (left; reflexivity); rewrite IH by (intros; apply H; right; assumption); reflexivity.
Qed.

Lemma lsum_map_zero : forall {A} (f : A -> R) l, (forall x, In x l -> f x = 0) -> lsum (map f l) = 0.
Proof.
  induction l as [|a l IH]; intros H; simpl; [reflexivity|].
  rewrite H by (left; reflexivity); rewrite IH by (intros; apply H; right; assumption); ring.
Qed.

Lemma lsum_map_repeat : forall {A} (f : A -> R) x k, lsum (map f (repeat x k)) = INR k * f x.
Proof.
  induction k as [|k IH]; [simpl; ring|]; cbn [repeat map lsum]; rewrite IH, S_INR; ring.
Qed.

Lemma lsum_perm : forall l l', Permutation.Permutation l l' -> lsum l = lsum l'.
Proof. intros l l' P; induction P; simpl; lra. Qed.

Lemma sumn_lsum_swap : forall {A} n (f : A -> nat -> R) l,
  sumn n (fun i => lsum (map (fun x => f x i) l)) = lsum (map (fun x => sumn n (f x)) l).
Proof.
  induction l as [|a l IH]; simpl.
  - apply sumn_zero; reflexivity.
  - rewrite sumn_plus, IH; reflexivity.
Qed.

Lemma lsum_exp_pos : forall (s : vec -> R) (X : list vec), X <> [] -> 0 < lsum (map (fun x => exp (s x)) X).
Proof.
  induction X as [|a X IH]; intros H; [contradiction|]; simpl.
  destruct X as [|b X]; simpl.
  - pose proof (exp_pos (s a)); lra.
  - assert (0 < lsum (map (fun x => exp (s x)) (b :: X))) by (apply IH; discriminate).
    simpl in H0; pose proof (exp_pos (s a)); lra.
Qed.

(** ** The single softmax-attention head (SPEC §1.1)

    s_i = x_iᵀ W x_N,  α = softmax(s),  f(X) = Σ_i α_i (vᵀ x_i). *)

(** The query: the last token x_N (the default is never used on a nonempty sequence). *)
Definition query (X : list vec) : vec := last X vzero.

Definition score (d : nat) (W : mat) (X : list vec) (x : vec) : R := bil d x W (query X).

Definition attn (d : nat) (W : mat) (v : vec) (X : list vec) : R :=
  lsum (map (fun x => exp (score d W X x) * dot d v x) X)
  / lsum (map (fun x => exp (score d W X x)) X).

(** ** Multi-head attention (SPEC §1.2): f(X) = Σ_h softmax(X W_h x_N)ᵀ (X v_h). *)

Definition Head := (mat * vec)%type.

Definition F (d : nat) (hs : list Head) (X : list vec) : R :=
  lsum (map (fun h => attn d (fst h) (snd h) X) hs).

(** ** The logistic function and its inverse *)

Definition sigmoid (x : R) : R := 1 / (1 + exp (- x)).
Definition logit (a : R) : R := ln (a / (1 - a)).

Lemma sigmoid_bounds : forall x, 0 < sigmoid x < 1.
Proof.
  intros x; unfold sigmoid; pose proof (exp_pos (- x)); split.
  - apply Rdiv_lt_0_compat; lra.
  - apply (Rmult_lt_reg_r (1 + exp (- x))); [lra|]; field_simplify; lra.
Qed.

Lemma logit_sigmoid : forall x, logit (sigmoid x) = x.
Proof.
  intros x; unfold logit, sigmoid; pose proof (exp_pos (- x)).
  replace (1 / (1 + exp (- x)) / (1 - 1 / (1 + exp (- x)))) with (exp x).
  - apply ln_exp.
  - rewrite exp_Ropp; field; pose proof (exp_pos x); lra.
Qed.

(** ** Linearity of a head in its value vector, and what a head reads *)

Lemma attn_v_add : forall d W v1 v2 X, attn d W (vadd v1 v2) X = attn d W v1 X + attn d W v2 X.
Proof.
  intros; unfold attn, Rdiv.
  rewrite <- Rmult_plus_distr_r, <- lsum_map_plus; f_equal.
  f_equal; apply map_ext; intros x; rewrite dot_add_l; ring.
Qed.

Lemma attn_v_zero : forall d W v X, (forall i, (i < d)%nat -> v i = 0) -> attn d W v X = 0.
Proof.
  intros d W v X Hv; unfold attn.
  rewrite lsum_map_zero; [unfold Rdiv; ring|].
  intros x _; unfold dot; rewrite sumn_zero; [ring|]; intros i Hi; rewrite Hv by assumption; ring.
Qed.

Lemma attn_v_ext : forall d W v v' X, (forall i, (i < d)%nat -> v i = v' i) -> attn d W v X = attn d W v' X.
Proof.
  intros; unfold attn, dot; f_equal; apply lsum_map_ext; intros; f_equal.
  apply sumn_ext; intros; rewrite H; [reflexivity|assumption].
Qed.

Lemma attn_W_ext : forall d W W' v X,
  (forall i j, (i < d)%nat -> (j < d)%nat -> W i j = W' i j) -> attn d W v X = attn d W' v X.
Proof.
  intros d W W' v X H.
  assert (E : forall x, score d W X x = score d W' X x).
  { intros x; unfold score, bil; apply sumn_ext; intros i Hi; apply sumn_ext; intros j Hj.
    rewrite H by assumption; reflexivity. }
  unfold attn; f_equal; f_equal; apply map_ext; intros x; rewrite E; reflexivity.
Qed.
