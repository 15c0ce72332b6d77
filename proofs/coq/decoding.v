(** * Theorem 4.1: the exact single-head learner decodes (W, v) from d² + d answers (SPEC §3.2).

    Counterpart of the learner [exact.learn.single_head] ([ProbePlan]); the sympy proof of
    the identity it rests on is [proofs.logit], its Coq proof [logit.v].

    The learner is written as a function of a black box [g : list vec -> R] only:
    1. read v̂_i = g([e_i]) for i < d;
    2. choose, from v̂ alone, a pivot p and shifts σ_k (the plan);
    3. probe with u_k = e_k + σ_k e_p;
    4. read t_kj = σ⁻¹((g([e_j + u_k; e_j]) − v̂_j) / v̂ᵀu_k) and return Ŵ_kj = t_kj − σ_k·t_pj.
    A plan is valid when p < d, σ_p = 0 and v̂ᵀu_k = v̂_k + σ_k v̂_p ≠ 0 for every k < d.

    [theorem_4_1_decoding]: for every d, every W, every v and every valid plan, every black
    box that answers the learner's own queries as the head (W, v) does is decoded to exactly
    (W, v); and the learner asks exactly d² + d queries ([queries_count]).
    Two plans are proved valid for every v ≠ 0: SPEC's ([spec_plan]: p the first index with
    v̂_p ≠ 0, σ_k = [v̂_k = 0], so u_k = e_k or e_k + e_p) and the shipped learner's
    ([learner_plan]: p the first index of largest |v̂_p|, σ_k = 0 when 2|v̂_k| ≥ |v̂_p|, else
    sign(v̂_k)·sign(v̂_p), or 1 when v̂_k = 0). *)

From Coq Require Import Reals Lra Lia List.
Import ListNotations.
From ExactAttention Require Import Defs logit.
Open Scope R_scope.

(** A plan: the pivot and the shifts, chosen from the value vector read. *)
Definition plan := vec -> (nat * (nat -> R)).

Definition valid (d : nat) (vh : vec) (pl : nat * (nat -> R)) : Prop :=
  let (p, s) := pl in (p < d)%nat /\ s p = 0 /\ forall k, (k < d)%nat -> vh k + s k * vh p <> 0.

Definition vscale (c : R) (x : vec) : vec := fun i => c * x i.

(** The learner, step by step; every step reads the black box [g] and the plan [choose] only. *)

(** Step 1: the value vector, one query [e_i] per coordinate. *)
Definition v_hat (g : list vec -> R) : vec := fun i => g [e i].

(** Step 2: the pivot and the shifts. *)
Definition pivot (choose : plan) (g : list vec -> R) : nat := fst (choose (v_hat g)).
Definition shift (choose : plan) (g : list vec -> R) : nat -> R := snd (choose (v_hat g)).

(** Step 3: the probes u_k = e_k + σ_k e_p. *)
Definition u (choose : plan) (g : list vec -> R) (k : nat) : vec :=
  vadd (e k) (vscale (shift choose g k) (e (pivot choose g))).

(** Step 4: the d² bilinear measurements, with b = e_j and a = e_j + u_k. *)
Definition probe (choose : plan) (g : list vec -> R) (k j : nat) : list vec := [vadd (e j) (u choose g k); e j].

Definition t (d : nat) (choose : plan) (g : list vec -> R) (k j : nat) : R :=
  logit ((g (probe choose g k j) - v_hat g j) / dot d (v_hat g) (u choose g k)).

Definition W_hat (d : nat) (choose : plan) (g : list vec -> R) : mat :=
  fun k j => t d choose g k j - shift choose g k * t d choose g (pivot choose g) j.

(** Every query the learner asks, in order. *)
Definition queries (d : nat) (choose : plan) (g : list vec -> R) : list (list vec) :=
  map (fun i => [e i]) (seq 0 d) ++ flat_map (fun k => map (fun j => probe choose g k j) (seq 0 d)) (seq 0 d).

Theorem queries_count : forall d choose g, length (queries d choose g) = (d * d + d)%nat.
Proof.
  intros d choose g; unfold queries; rewrite app_length, map_length, seq_length.
  assert (H : forall l, length (flat_map (fun k => map (fun j => probe choose g k j) (seq 0 d)) l)
                        = (length l * d)%nat).
  { induction l as [|a l IH]; simpl; [reflexivity|]; rewrite app_length, map_length, seq_length, IH; reflexivity. }
  rewrite H, seq_length; lia.
Qed.

Lemma in_queries_e : forall d choose g i, (i < d)%nat -> In [e i] (queries d choose g).
Proof.
  intros; unfold queries; apply in_or_app; left; apply (in_map (fun i => [e i])); apply in_seq; lia.
Qed.

Lemma in_queries_probe : forall d choose g k j, (k < d)%nat -> (j < d)%nat ->
  In (probe choose g k j) (queries d choose g).
Proof.
  intros; unfold queries; apply in_or_app; right; apply in_flat_map.
  exists k; split; [apply in_seq; lia|]; apply (in_map (fun j => probe choose g k j)); apply in_seq; lia.
Qed.

(** One token: α = 1, so f([x]) = vᵀx. *)
Lemma attn_one_token : forall d W v x, attn d W v [x] = dot d v x.
Proof.
  intros; unfold attn; cbn [map lsum]; pose proof (exp_pos (score d W [x] x)); field; lra.
Qed.

Lemma dot_vscale_r : forall d x c y, dot d x (vscale c y) = c * dot d x y.
Proof. intros; unfold dot, vscale; rewrite <- sumn_scal_l; apply sumn_ext; intros; ring. Qed.

Lemma bil_vscale_l : forall d c x W q, bil d (vscale c x) W q = c * bil d x W q.
Proof.
  intros; unfold bil, vscale; rewrite <- sumn_scal_l; apply sumn_ext; intros.
  rewrite <- sumn_scal_l; apply sumn_ext; intros; ring.
Qed.

Theorem theorem_4_1_decoding : forall (d : nat) (choose : plan) (W : mat) (v : vec) (g : list vec -> R),
  valid d (v_hat g) (choose (v_hat g)) ->
  (forall X, In X (queries d choose g) -> g X = attn d W v X) ->
  (forall i, (i < d)%nat -> v_hat g i = v i) /\
  (forall k j, (k < d)%nat -> (j < d)%nat -> W_hat d choose g k j = W k j).
Proof.
  intros d choose W v g Hval Hg.
  assert (Hv : forall i, (i < d)%nat -> v_hat g i = v i).
  { intros i Hi; unfold v_hat; rewrite Hg by (apply in_queries_e; assumption).
    rewrite attn_one_token; apply dot_e_r; assumption. }
  split; [assumption|].
  unfold valid in Hval; fold (pivot choose g) (shift choose g) in Hval.
  destruct (choose (v_hat g)) as [p0 s0] eqn:Hc.
  assert (Hp : pivot choose g = p0) by (unfold pivot; rewrite Hc; reflexivity).
  assert (Hs : shift choose g = s0) by (unfold shift; rewrite Hc; reflexivity).
  destruct Hval as [Hpd [Hsp Hnz]].
  assert (Hdot : forall k, (k < d)%nat -> dot d (v_hat g) (u choose g k) = dot d v (u choose g k)).
  { intros k Hk; unfold dot; apply sumn_ext; intros; rewrite Hv by assumption; reflexivity. }
  assert (Hvu : forall k, (k < d)%nat -> dot d v (u choose g k) = v_hat g k + s0 k * v_hat g p0).
  { intros k Hk; unfold u; rewrite dot_add_r, dot_vscale_r, Hp, Hs, !dot_e_r, !Hv by assumption; reflexivity. }
  assert (Ht : forall k j, (k < d)%nat -> (j < d)%nat -> t d choose g k j = bil d (u choose g k) W (e j)).
  { intros k j Hk Hj; unfold t; rewrite Hg by (apply in_queries_probe; assumption).
    unfold probe; rewrite Hdot, Hv by assumption.
    rewrite <- (dot_e_r d v j) by assumption.
    symmetry; apply logit_inverse; rewrite Hvu by assumption; apply Hnz; assumption. }
  assert (Hb : forall k j, (k < d)%nat -> (j < d)%nat -> bil d (u choose g k) W (e j) = W k j + s0 k * W p0 j).
  { intros k j Hk Hj; unfold u; rewrite bil_add_l, bil_vscale_l, Hp, Hs, !bil_e_e by assumption; reflexivity. }
  intros k j Hk Hj; unfold W_hat; rewrite Hp, Hs, !Ht, !Hb, Hsp by assumption; ring.
Qed.

(** ** SPEC's plan: the first is_nonzero coordinate, and e_k + e_p where v̂_k = 0. *)

Definition is_nonzero (x : R) : bool := if Req_EM_T x 0 then false else true.

Lemma is_nonzero_spec : forall x, is_nonzero x = true <-> x <> 0.
Proof. intros x; unfold is_nonzero; destruct (Req_EM_T x 0); split; congruence. Qed.

Lemma is_nonzero_false : forall x, is_nonzero x = false <-> x = 0.
Proof. intros x; unfold is_nonzero; destruct (Req_EM_T x 0); split; congruence. Qed.

Definition spec_plan (d : nat) : plan := fun vh =>
  let p := match find (fun i => is_nonzero (vh i)) (seq 0 d) with Some p => p | None => O end in
  (p, fun k => if is_nonzero (vh k) then 0 else 1).

Lemma spec_plan_valid : forall d vh, (exists i, (i < d)%nat /\ vh i <> 0) -> valid d vh (spec_plan d vh).
Proof.
  intros d vh [i0 [Hi0 Hv0]]; unfold spec_plan, valid.
  destruct (find (fun i => is_nonzero (vh i)) (seq 0 d)) as [p|] eqn:Hf.
  - apply find_some in Hf as [Hin Hnz]; apply in_seq in Hin.
    split; [lia|]; split; [rewrite Hnz; reflexivity|]; apply is_nonzero_spec in Hnz.
    intros k Hk; destruct (is_nonzero (vh k)) eqn:Hk0.
    + apply is_nonzero_spec in Hk0; lra.
    + apply is_nonzero_false in Hk0; lra.
  - exfalso; assert (Hn : is_nonzero (vh i0) = false) by (apply (find_none _ _ Hf); apply in_seq; lia).
    apply is_nonzero_false in Hn; contradiction.
Qed.

(** ** The shipped learner's plan: the largest |v̂_p|, and shifts only for small |v̂_k|. *)

(** The first index below n of largest |f i|. *)
Fixpoint argmax_abs (f : vec) (n : nat) : nat :=
  match n with
  | O => O
  | S m => let i := argmax_abs f m in if Rlt_dec (Rabs (f i)) (Rabs (f m)) then m else i
  end.

Lemma argmax_abs_spec : forall f n, (0 < n)%nat ->
  (argmax_abs f n < n)%nat /\ forall k, (k < n)%nat -> Rabs (f k) <= Rabs (f (argmax_abs f n)).
Proof.
  intros f n; induction n as [|n IH]; intros Hn; [lia|]; cbn [argmax_abs].
  destruct n as [|n].
  - cbn [argmax_abs]; destruct (Rlt_dec (Rabs (f O)) (Rabs (f O))); split; try lia;
      intros k Hk; replace k with O by lia; lra.
  - destruct (IH ltac:(lia)) as [Hlt Hmax]; set (i := argmax_abs f (S n)) in *.
    destruct (Rlt_dec (Rabs (f i)) (Rabs (f (S n)))) as [Hr|Hr]; split; try lia; intros k Hk;
      destruct (Nat.eq_dec k (S n)); subst; try lra;
      [pose proof (Hmax k ltac:(lia)); lra | apply Hmax; lia].
Qed.

Definition sgn (x : R) : R := if Rlt_dec 0 x then 1 else if Rlt_dec x 0 then -1 else 0.

Definition learner_plan (d : nat) : plan := fun vh =>
  let p := argmax_abs vh d in
  (p, fun k => if Nat.eq_dec k p then 0
               else if Rle_dec (Rabs (vh p)) (2 * Rabs (vh k)) then 0
               else if Req_EM_T (sgn (vh k) * sgn (vh p)) 0 then 1 else sgn (vh k) * sgn (vh p)).

Lemma learner_plan_valid : forall d vh, (exists i, (i < d)%nat /\ vh i <> 0) -> valid d vh (learner_plan d vh).
Proof.
  intros d vh [i0 [Hi0 Hv0]]; unfold learner_plan, valid.
  destruct (argmax_abs_spec vh d ltac:(lia)) as [Hpd Hmax]; set (p := argmax_abs vh d) in *.
  assert (Hp : vh p <> 0).
  { intros E; pose proof (Hmax i0 Hi0); rewrite E, Rabs_R0 in H.
    pose proof (Rabs_pos_lt _ Hv0); lra. }
  repeat split; [assumption| destruct (Nat.eq_dec p p); [reflexivity|contradiction] |].
  intros k Hk; destruct (Nat.eq_dec k p) as [->|Hkp]; [lra|].
  destruct (Rle_dec (Rabs (vh p)) (2 * Rabs (vh k))) as [Hbig|Hsmall].
  - intros E; assert (vh k = 0) by lra; subst; rewrite H, Rabs_R0 in Hbig.
    pose proof (Rabs_pos_lt _ Hp); lra.
  - unfold sgn; destruct (Rlt_dec 0 (vh p)), (Rlt_dec (vh p) 0); try lra;
      destruct (Rlt_dec 0 (vh k)), (Rlt_dec (vh k) 0); try lra;
      match goal with |- context [Req_EM_T ?a 0] => destruct (Req_EM_T a 0) end; try lra.
Qed.

(** Theorem 4.1 for the two plans: every W and every v ≠ 0 come back exactly. *)
Corollary theorem_4_1_spec_plan : forall d W v g, (exists i, (i < d)%nat /\ v i <> 0) ->
  (forall X, In X (queries d (spec_plan d) g) -> g X = attn d W v X) ->
  (forall i, (i < d)%nat -> v_hat g i = v i) /\
  (forall k j, (k < d)%nat -> (j < d)%nat -> W_hat d (spec_plan d) g k j = W k j).
Proof.
  intros d W v g [i0 [Hi0 Hv0]] Hg; apply theorem_4_1_decoding; [|assumption].
  apply spec_plan_valid; exists i0; split; [assumption|].
  unfold v_hat; rewrite Hg by (apply in_queries_e; assumption); rewrite attn_one_token, dot_e_r; assumption.
Qed.

Corollary theorem_4_1_learner_plan : forall d W v g, (exists i, (i < d)%nat /\ v i <> 0) ->
  (forall X, In X (queries d (learner_plan d) g) -> g X = attn d W v X) ->
  (forall i, (i < d)%nat -> v_hat g i = v i) /\
  (forall k j, (k < d)%nat -> (j < d)%nat -> W_hat d (learner_plan d) g k j = W k j).
Proof.
  intros d W v g [i0 [Hi0 Hv0]] Hg; apply theorem_4_1_decoding; [|assumption].
  apply learner_plan_valid; exists i0; split; [assumption|].
  unfold v_hat; rewrite Hg by (apply in_queries_e; assumption); rewrite attn_one_token, dot_e_r; assumption.
Qed.
