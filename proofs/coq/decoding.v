(** * Theorem 4.1: the exact single-head learner decodes (W, v) from d² + d answers (SPEC §3.2).

    Counterpart of the learner [exact.learn.single_head] (the sympy proofs check the logit
    primitive it rests on, [proofs.logit]; this file proves the algorithm itself).

    The learner is written as a function of a black box [g : list vec -> R] only:
    1. read v̂_i = g([e_i]) for i < d;
    2. pick the pivot p, the first index with v̂_p ≠ 0;
    3. set u_k = e_k when v̂_k ≠ 0, else u_k = e_k + e_p;
    4. read t_kj = σ⁻¹((g([u_k + e_j; e_j]) − v̂_j) / v̂ᵀu_k) and return
       Ŵ_kj = t_kj − [v̂_k = 0]·t_pj.
    The theorem: for every d, every W and every v ≠ 0, every black box that answers the
    learner's own queries as the head (W, v) does is decoded to exactly (W, v), and the
    learner asks exactly d² + d queries. *)

From Coq Require Import Reals Lra Lia List.
Import ListNotations.
From ExactAttention Require Import Defs logit.
Open Scope R_scope.

Section Learner.

Variable d : nat.
Variable g : list vec -> R.

(** Step 1: the value vector, one query [e_i] per coordinate. *)
Definition v_hat : vec := fun i => g [e i].

Definition nonzero (x : R) : bool := if Req_EM_T x 0 then false else true.

(** Step 2: the pivot, the first p < d with v̂_p ≠ 0 (0 if there is none). *)
Definition pivot : nat :=
  match find (fun i => nonzero (v_hat i)) (seq 0 d) with
  | Some p => p
  | None => O
  end.

(** Step 3: the probes. *)
Definition u (k : nat) : vec := if nonzero (v_hat k) then e k else vadd (e k) (e pivot).

(** Step 4: the d² bilinear measurements, with b = e_j and a = e_j + u_k. *)
Definition probe (k j : nat) : list vec := [vadd (e j) (u k); e j].

Definition t (k j : nat) : R := logit ((g (probe k j) - v_hat j) / dot d v_hat (u k)).

Definition W_hat : mat := fun k j => if nonzero (v_hat k) then t k j else t k j - t pivot j.

(** Every query the learner asks, in order. *)
Definition queries : list (list vec) :=
  map (fun i => [e i]) (seq 0 d) ++ flat_map (fun k => map (fun j => probe k j) (seq 0 d)) (seq 0 d).

End Learner.

Lemma nonzero_spec : forall x, nonzero x = true <-> x <> 0.
Proof. intros x; unfold nonzero; destruct (Req_EM_T x 0); split; congruence. Qed.

Lemma nonzero_false : forall x, nonzero x = false <-> x = 0.
Proof. intros x; unfold nonzero; destruct (Req_EM_T x 0); split; congruence. Qed.

Theorem queries_count : forall d g, length (queries d g) = (d * d + d)%nat.
Proof.
  intros d g; unfold queries; rewrite app_length, map_length, seq_length.
  assert (H : forall l, length (flat_map (fun k => map (fun j => probe d g k j) (seq 0 d)) l) = (length l * d)%nat).
  { induction l as [|a l IH]; simpl; [reflexivity|]; rewrite app_length, map_length, seq_length, IH; reflexivity. }
  rewrite H, seq_length; lia.
Qed.

Lemma in_queries_e : forall d g i, (i < d)%nat -> In [e i] (queries d g).
Proof.
  intros; unfold queries; apply in_or_app; left; apply (in_map (fun i => [e i])); apply in_seq; lia.
Qed.

Lemma in_queries_probe : forall d g k j, (k < d)%nat -> (j < d)%nat -> In (probe d g k j) (queries d g).
Proof.
  intros; unfold queries; apply in_or_app; right; apply in_flat_map.
  exists k; split; [apply in_seq; lia|]; apply (in_map (fun j => probe d g k j)); apply in_seq; lia.
Qed.

(** One token: α = 1, so f([x]) = vᵀx. *)
Lemma attn_one_token : forall d W v x, attn d W v [x] = dot d v x.
Proof.
  intros; unfold attn; cbn [map lsum]; pose proof (exp_pos (score d W [x] x)); field; lra.
Qed.

Theorem theorem_4_1_decoding : forall (d : nat) (W : mat) (v : vec) (g : list vec -> R),
  (exists i, (i < d)%nat /\ v i <> 0) ->
  (forall X, In X (queries d g) -> g X = attn d W v X) ->
  (forall i, (i < d)%nat -> v_hat g i = v i) /\
  (forall k j, (k < d)%nat -> (j < d)%nat -> W_hat d g k j = W k j).
Proof.
  intros d W v g [i0 [Hi0 Hv0]] Hg.
  (* the value vector *)
  assert (Hv : forall i, (i < d)%nat -> v_hat g i = v i).
  { intros i Hi; unfold v_hat; rewrite Hg by (apply in_queries_e; assumption).
    rewrite attn_one_token; apply dot_e_r; assumption. }
  split; [assumption|].
  (* the pivot is a coordinate with v_p ≠ 0 *)
  assert (Hp : (pivot d g < d)%nat /\ v_hat g (pivot d g) <> 0).
  { unfold pivot; destruct (find (fun i => nonzero (v_hat g i)) (seq 0 d)) as [p|] eqn:Hf.
    - apply find_some in Hf as [Hin Hnz]; apply in_seq in Hin; apply nonzero_spec in Hnz; split; [lia|assumption].
    - exfalso; assert (Hn : nonzero (v_hat g i0) = false) by (apply (find_none _ _ Hf); apply in_seq; lia).
      apply nonzero_false in Hn; rewrite Hv in Hn by assumption; contradiction. }
  destruct Hp as [Hpd Hpv]; set (p := pivot d g) in *.
  (* each probe has vᵀu_k ≠ 0, and the measurement is exactly u_kᵀ W e_j *)
  assert (Hdot : forall k, (k < d)%nat -> dot d (v_hat g) (u d g k) = dot d v (u d g k)).
  { intros k Hk; unfold dot; apply sumn_ext; intros; rewrite Hv by assumption; reflexivity. }
  assert (Hu : forall k, (k < d)%nat -> dot d v (u d g k) <> 0).
  { intros k Hk; unfold u; fold p; destruct (nonzero (v_hat g k)) eqn:Hk0.
    - apply nonzero_spec in Hk0; rewrite dot_e_r, <- Hv by assumption; assumption.
    - apply nonzero_false in Hk0; rewrite dot_add_r, !dot_e_r, <- !Hv by assumption; lra. }
  assert (Ht : forall k j, (k < d)%nat -> (j < d)%nat -> t d g k j = bil d (u d g k) W (e j)).
  { intros k j Hk Hj; unfold t; rewrite Hg by (apply in_queries_probe; assumption).
    unfold probe; rewrite Hdot, Hv by assumption.
    rewrite <- (dot_e_r d v j) by assumption.
    symmetry; apply logit_inverse; apply Hu; assumption. }
  intros k j Hk Hj; unfold W_hat; fold p.
  destruct (nonzero (v_hat g k)) eqn:Hk0.
  - rewrite Ht by assumption; unfold u; rewrite Hk0; apply bil_e_e; assumption.
  - rewrite !Ht by assumption; unfold u; rewrite Hk0; fold p.
    assert (Hpp : nonzero (v_hat g p) = true) by (apply nonzero_spec; assumption).
    rewrite Hpp, bil_add_l, !bil_e_e by assumption; ring.
Qed.
